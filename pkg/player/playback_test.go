package player

import (
	"net/http"
	"testing"
)

// pageScenarios are played in order through pageHarness's page(); the
// first that fails ends the run with its name.
const pageScenarios = `const scenarios = {
  async "ICE servers from the endpoint: the OPTIONS carries the token, its TURN server reaches the PeerConnection"() {
    const p = page({ joins: ["absent"], storage: new Store(), token: "a-viewer-token-0123456789", iceFromEndpoint: true });
    await p.playing();
    const opts = p.w.probes.filter((x) => x.method === "OPTIONS");
    assert.equal(opts.length, 1, "one OPTIONS before the offer");
    assert.equal(opts[0].headers && opts[0].headers.Authorization, "Bearer a-viewer-token-0123456789");
    const ice = p.w.pcs[0].config && p.w.pcs[0].config.iceServers;
    assert.ok(ice && ice.some((s) => String(s.urls) === "turn:t.example" && s.username === "1:ab" && s.credential === "c"),
      "the PeerConnection got the TURN server: " + JSON.stringify(ice));
  },
  async "first visit, stream with audio: muted autoplay, one click anywhere unmutes and is remembered"() {
    const storage = new Store();
    const p = page({ joins: ["sendonly"], storage });
    await p.playing();
    const pc = p.w.pcs[0];
    assert.deepEqual(pc.transceivers.map((t) => t.kind + " " + t.direction), ["video recvonly", "audio recvonly"]);
    assert.match(pc.offer, /m=audio [^\r]*\r\na=mid:1\r\na=recvonly/, "the POSTed offer asks for audio");
    assert.deepEqual(p.video.srcObject.getTracks().map((t) => t.kind), ["video", "audio"], "one stream, both tracks");
    assert.deepEqual(p.video.plays, [{ muted: true, activated: false }]);
    assert.equal(p.video.muted, true);
    assert.equal(p.button(), "Unmute");

    const s = await p.stats();
    assert.equal(s.hasAudio, true);
    assert.equal(s.muted, true);
    assert.equal(s.audioPacketsReceived, 50);
    assert.equal(s.audioPacketsLost, 1);
    assert.equal(s.audioBytesReceived, 6000);
    assert.equal(s.totalSamplesReceived, 48000);
    assert.equal(s.concealedSamples, 480);
    assert.equal(s.silentConcealedSamples, 0);
    assert.equal(s.audioLevel, 0.25);
    assert.equal(s.audioCodec, "audio/opus minptime=10;useinbandfec=1");
    assert.equal(s.packetsReceived, 400, "the video figures stay the video's");

    await p.click(p.statsBtn);
    assert.equal(p.video.muted, true, "Stats is not a request for sound");
    assert.equal(storage.getItem(SOUND_KEY), null);

    await p.click(p.video);
    assert.equal(p.video.muted, false, "a click on the video unmutes");
    assert.equal(storage.getItem(SOUND_KEY), "on");
    assert.equal(p.button(), "Mute");
    assert.equal((await p.stats()).muted, false);

    await p.click(p.unmute);
    assert.equal(p.video.muted, true, "the button mutes again");
    assert.equal(storage.getItem(SOUND_KEY), "off");
    assert.equal(p.button(), "Unmute");
    await p.click(p.video);
    assert.equal(p.video.muted, true, "after Mute a stray click keeps the sound off");
    await p.click(p.unmute);
    assert.equal(p.video.muted, false);
    assert.equal(storage.getItem(SOUND_KEY), "on");
    p.leave();
  },

  async "remembered sound, browser allows it: plays with sound at once"() {
    const storage = new Store({ [SOUND_KEY]: "on" });
    const p = page({ joins: ["sendonly"], storage, soundAutoplay: true });
    await p.playing();
    assert.deepEqual(p.video.plays, [{ muted: false, activated: false }]);
    assert.equal(p.video.muted, false);
    assert.equal(p.button(), "Mute");
    p.leave();
  },

  async "remembered sound, browser refuses: falls back to muted and offers Unmute"() {
    const storage = new Store({ [SOUND_KEY]: "on" });
    const p = page({ joins: ["sendonly"], storage });
    await p.playing();
    await p.until("the fallback", () => p.video.plays.length === 2);
    assert.deepEqual(p.video.plays.map((x) => x.muted), [false, true]);
    assert.equal(p.video.muted, true);
    assert.equal(p.button(), "Unmute");
    assert.equal(p.els.status.textContent, "Playing", "a refused unmute still plays");
    assert.equal(storage.getItem(SOUND_KEY), "on", "the browser's refusal is not the viewer's choice");
    assert.equal((await p.stats()).soundPref, true);
    await p.click(p.els.status);
    assert.equal(p.video.muted, false, "a click anywhere on the page unmutes");
    p.leave();
  },

  async "remembered mute: stays muted with Unmute offered"() {
    const storage = new Store({ [SOUND_KEY]: "off" });
    const p = page({ joins: ["sendonly"], storage, soundAutoplay: true });
    await p.playing();
    assert.deepEqual(p.video.plays.map((x) => x.muted), [true]);
    assert.equal(p.button(), "Unmute");
    p.leave();
  },

  async "stream without audio: no sound button, clicks change nothing"() {
    for (const audio of ["rejected", "absent"]) {
      const storage = new Store({ [SOUND_KEY]: "on" });
      const p = page({ joins: [audio], storage, soundAutoplay: true });
      await p.playing();
      assert.equal(p.button(), "hidden", audio);
      assert.equal(p.video.muted, true, audio + ": nothing to hear, nothing to try");
      const s = await p.stats();
      assert.equal(s.hasAudio, false, audio);
      assert.equal(s.audioPacketsReceived, 0, audio);
      await p.click(p.video);
      assert.equal(p.button(), "hidden", audio);
      assert.equal(storage.getItem(SOUND_KEY), "on", audio);
      p.leave();
    }
  },

  async "every join decides again: audio comes, then goes"() {
    const p = page({ joins: ["rejected", "sendonly", "absent"], storage: new Store() });
    await p.playing();
    assert.equal(p.button(), "hidden");
    p.fail("failed");
    await p.until("the second join", () => p.w.pcs.length === 2 && p.els.status.textContent === "Playing");
    assert.equal(p.button(), "Unmute", "the publisher gained audio");
    assert.equal((await p.stats()).hasAudio, true);
    await p.click(p.video);
    assert.equal(p.video.muted, false);
    p.fail("failed");
    assert.equal(p.button(), "hidden", "a lost connection has nothing to unmute");
    await p.until("the third join", () => p.w.pcs.length === 3 && p.els.status.textContent === "Playing");
    assert.equal(p.button(), "hidden", "the publisher lost audio");
    assert.equal((await p.stats()).hasAudio, false);
    p.leave();
  },

  async "either signal is enough: the answer says audio, or an audio track arrives"() {
    let p = page({ joins: ["sendonly"], storage: new Store(), audioTrack: "never" });
    await p.playing();
    assert.equal(p.button(), "Unmute", "answer with audio, no track event (yet)");
    p.leave();
    p = page({ joins: ["absent"], storage: new Store(), audioTrack: "always" });
    await p.playing();
    assert.equal(p.button(), "Unmute", "an audio track the answer did not announce");
    assert.equal((await p.stats()).hasAudio, true);
    p.leave();
  },

  async "a stalled picture says the stream is interrupted and plays again by itself"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    await p.playing();
    p.w.frozen = true;
    const frozenAt = Date.now();
    await p.until("the interruption", () => p.els.status.textContent === "Stream interrupted — waiting for the publisher");
    const after = Date.now() - frozenAt;
    assert.ok(after < 2000, "interruption shown " + after + " ms after the last frame, want < 2 s");
    await p.until("a probe of the session", () => p.w.probes.length > 0);
    assert.deepEqual(p.w.probes.map((x) => [x.url, x.method, x.mode]), [["http://h/live/cam1/whep/s1", "HEAD", "no-cors"]]);
    p.w.frozen = false;
    await p.playing();
    assert.equal(p.w.pcs.length, 1, "the session was kept: no new POST");
    p.leave();
  },

  async "a stalled picture whose server is gone reconnects at once, without waiting for ICE"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    await p.playing();
    // The server dies: no frames, connections refused, and the stand-in's
    // ICE, like a browser's for seconds, still says connected.
    p.w.frozen = true;
    p.w.gone = true;
    const diedAt = Date.now();
    await p.until("the probe", () => p.w.probes.some((x) => x.method === "HEAD"));
    await p.until("the next attempt", () => p.w.pcs.length === 2);
    assert.equal(p.w.pcs[0].closed, true, "the dead session's PeerConnection is closed");
    assert.equal(p.els.status.textContent, "Stream interrupted — waiting for the publisher");
    // Another server behind the endpoint takes the POST and plays.
    p.w.frozen = false;
    await p.playing();
    const took = Date.now() - diedAt;
    assert.ok(took < 3500, "playing again " + took + " ms after the server died, want the stall (1.2 s) and one 1 s back-off");
    p.leave();
  },

  async "a 404 after playing retries from 1 s again"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    await p.playing();
    p.w.frozen = true;
    await p.until("the interruption", () => p.els.status.className === "stalled");
    // The server ends the session (the publisher did not come back) and
    // the path is gone: every later POST gets 404.
    p.w.notFound = true;
    p.w.frozen = false;
    p.fail("closed");
    assert.equal(p.els.status.textContent, "Stream interrupted — waiting for the publisher", "the same outage, not a new error");
    await p.until("two refused POSTs", () => p.w.refusals.length >= 2, 6000);
    const gap = p.w.refusals[1] - p.w.refusals[0];
    assert.ok(gap >= 900 && gap < 1600, "the retry after the first 404 came " + gap + " ms later, want 1 s");
    assert.equal(p.els.status.textContent, "Waiting for the stream…");
    p.leave();
  },

  async "a 409 shows the problem's detail, retries after retry_after with back-off, and plays once published"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    p.w.conflict = true;
    await p.until("two refused POSTs", () => p.w.refusals.length >= 2, 6000);
    const gap = p.w.refusals[1] - p.w.refusals[0];
    assert.ok(gap >= 900 && gap < 1600, "the retry after the first 409 came " + gap + " ms later, want 1 s");
    assert.equal(p.els.status.textContent, 'Waiting for the stream — no stream is being published on path "live/cam1"');
    assert.equal(p.els.status.className, "waiting");
    await p.until("a third refused POST", () => p.w.refusals.length >= 3, 6000);
    const gap2 = p.w.refusals[2] - p.w.refusals[1];
    assert.ok(gap2 >= 1900, "the second retry came " + gap2 + " ms later, want the back-off's 2 s");
    p.w.conflict = false;
    await p.until("Playing", () => p.els.status.textContent === "Playing", 6000);
    p.leave();
  },

  async "a 400 for no H.264 says what to do in plain words and does not retry"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    p.w.noH264 = true;
    await p.until("the error", () => p.els.status.className === "error");
    assert.equal(p.els.status.textContent,
      "This browser offers no H.264 for WebRTC: enable the OpenH264 plugin (Firefox: about:addons → Plugins) or use another browser");
    await new Promise((r) => realSetTimeout(r, 2500));
    assert.equal(p.w.refusals.length, 1, "the page retried an offer that cannot succeed");
    p.leave();
  },

  async "a 409 for a codec this browser cannot decode shows the server's detail, keeps it, and asks again only slowly"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    const detail = "This stream is H.265 (HEVC, Main), which this browser cannot play over WebRTC: its offer has no H265/90000 video (it offered VP8, H264). " +
      "Use Safari 17+ or Chrome 136+ with hardware HEVC decoding. This path passes video through (video: passthrough): the operator can set video: auto for it";
    p.w.problem = { type: "https://srtwhep.dev/problems/video-codec-unsupported", title: "Browser cannot decode this path's video", status: 409, detail };
    await p.until("the refusal", () => p.els.status.className === "unsupported");
    assert.equal(p.els.status.textContent, detail);
    await new Promise((r) => realSetTimeout(r, 2500));
    assert.equal(p.w.refusals.length, 1, "the page asked again within 2.5 s; a codec refusal is asked again only every 20 s");
    assert.equal(p.els.status.textContent, detail, "the refusal stays on screen while the page waits");
    assert.equal(p.video.srcObject, null, "no video for a refused viewer");
    p.leave();
  },

  async "a 429 waits for the server's retry_after, counting down, then plays"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    p.w.problem = { type: "https://srtwhep.dev/problems/offer-rate", title: "Too many offers", status: 429,
      detail: "too many offers from your address", retry_after: 2 };
    await p.until("the countdown", () => /^Too many attempts from this address — retrying in [12] s$/.test(p.els.status.textContent));
    assert.equal(p.w.refusals.length, 1);
    p.w.problem = null;
    await p.until("Playing", () => p.els.status.textContent === "Playing", 6000);
    const waited = Date.now() - p.w.refusals[0];
    assert.ok(waited >= 1900, "asked again " + waited + " ms after the 429, before its retry_after of 2 s");
    p.leave();
  },

  async "refused again and again: the page stops after RETRY_MAX_TRIES refusals in a row and asks again on a click"() {
    const p = page({ joins: ["absent"], storage: new Store(), speed: 100 });
    p.w.problem = { type: "https://srtwhep.dev/problems/offer-rate", title: "Too many offers", status: 429,
      detail: "too many offers from your address", retry_after: 1 };
    await p.until("the page to give up", () => /^Too many attempts from this address — click to try again$/.test(p.els.status.textContent), 10000);
    assert.equal(p.w.refusals.length, 30, "POSTs refused before the page gave up");
    // Page time: each wait is at least Retry-After (1 s); late timers on a
    // busy machine only stretch it.
    const waited = (p.w.refusals[29] - p.w.refusals[0]) * 100;
    assert.ok(waited >= 29 * 1000 * 0.9, "29 waits took " + waited + " ms of page time, want at least 29 × Retry-After");
    await new Promise((r) => realSetTimeout(r, 100)); // 10 s of page time
    assert.equal(p.w.refusals.length, 30, "the page asked again by itself after giving up");
    p.w.problem = null;
    await p.click(p.video);
    await p.until("a POST after the click", () => p.w.posts === 1);
    p.leave();
  },

  async "the server closing DTLS ends the attempt at once, though the browser still says connected"() {
    const p = page({ joins: ["absent"], storage: new Store() });
    await p.playing();
    const pc = p.w.pcs[0];
    pc.closeDTLS();
    assert.equal(pc.closed, true, "the PeerConnection is closed by the page");
    assert.equal(pc.connectionState, "connected", "the stand-in, like a browser, still says connected");
    assert.match(p.els.status.textContent, /^Stream ended — retrying in 1 s$/);
    await p.until("the next join", () => p.w.pcs.length === 2 && p.els.status.textContent === "Playing", 3000);
    p.leave();
  },

  async "storage that throws: the page still plays and unmutes"() {
    const p = page({ joins: ["sendonly"], storage: "throws" });
    await p.playing();
    assert.equal(p.button(), "Unmute");
    await p.click(p.video);
    assert.equal(p.video.muted, false);
    assert.equal(p.button(), "Mute");
    p.leave();
  },
};

(async () => {
  for (const [name, run] of Object.entries(scenarios)) {
    try {
      await run();
    } catch (e) {
      console.error("scenario: " + name + "\n", e);
      process.exit(1);
    }
  }
  console.log("ok");
  process.exit(0);
})();
`

// TestPagePlayback runs the page's own script (taken from a served page, so
// what ships is what is tested) through the sound scenarios above.
func TestPagePlayback(t *testing.T) {
	rec := serve(t, New(Config{}), http.MethodGet, "/live/cam1")
	m := inlineScript.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no <script nonce=...> element in the page")
	}
	runNode(t, map[string]string{"page-inline.js": m[1], "harness.js": pageHarness + pageScenarios}, "harness.js")
}
