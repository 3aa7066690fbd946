package player

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

const nodeHint = "node (Node.js >= 18) is needed to check the player's JavaScript: apt-get install -y nodejs"

func nodeBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s (%v)", nodeHint, err)
	}
	return bin
}

var inlineScript = regexp.MustCompile(`(?s)<script nonce="[^"]+">(.*?)</script>`)

// TestInlineScriptSyntax runs the script exactly as the page carries it
// through node --check, which catches syntax errors the browser would only
// report at load time (and then play nothing).
func TestInlineScriptSyntax(t *testing.T) {
	node := nodeBin(t)
	rec := serve(t, New(Config{}), http.MethodGet, "/live/cam1")
	m := inlineScript.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no <script nonce=...> element in the page")
	}
	if m[1] != scriptSrc {
		t.Fatal("html/template altered the inline script; it must be inserted verbatim")
	}
	file := filepath.Join(t.TempDir(), "page-inline.js")
	if err := os.WriteFile(file, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", file).CombinedOutput(); err != nil {
		t.Fatalf("node --check of the page's inline script: %v\n%s", err, out)
	}
}

// helperChecks exercises the DOM-free WHEP helpers in whep.js. The Link
// value is the format pkg/whep writes (RFC 9725 §4.6), several headers
// joined by ", " as fetch's Headers.get returns them.
const helperChecks = `
const assert = require("node:assert/strict");
const h = require("./whep.js");

assert.equal(h.whepEndpoint("http://10.0.0.1:8889/live/cam1?token=abc#x"), "http://10.0.0.1:8889/live/cam1/whep");
assert.equal(h.whepEndpoint("http://proxy.example/tv/live/cam1"), "http://proxy.example/tv/live/cam1/whep");
assert.equal(h.whepEndpoint("http://h/a/"), "http://h/a/whep");

// Problem details (RFC 9457): the detail, the type's slug, retry_after;
// anything else is shown as text.
assert.deepEqual(h.parseProblem("application/problem+json",
  '{"type":"https://srtwhep.dev/problems/no-publisher","title":"No publisher on this path","status":409,"detail":"no stream on \\"live/a\\"","retry_after":2}\n'),
  { slug: "no-publisher", text: 'no stream on "live/a"', retryAfter: 2 });
assert.deepEqual(h.parseProblem("application/problem+json; charset=utf-8", '{"type":"about:blank","title":"Conflict","status":409}'),
  { slug: "about:blank", text: "Conflict", retryAfter: null });
assert.deepEqual(h.parseProblem("text/plain; charset=utf-8", "  offer has no video m-section\n"),
  { slug: "", text: "offer has no video m-section", retryAfter: null });
assert.deepEqual(h.parseProblem("application/problem+json", "not json"), { slug: "", text: "not json", retryAfter: null });
assert.deepEqual(h.parseProblem(null, undefined), { slug: "", text: "", retryAfter: null });
assert.match(h.NO_H264, /OpenH264/);

assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 1000].map(h.backoffMs), [1000, 2000, 4000, 8000, 10000, 10000, 10000, 10000]);

const fw = h.frameWatch(1000);
assert.equal(fw.check(5000), null, "no stall before the first frame");
assert.equal(fw.frame(0), null);
assert.equal(fw.check(999), null);
assert.equal(fw.check(1000), "stalled");
assert.equal(fw.check(1500), null, "reported once");
assert.equal(fw.stalled, true);
assert.equal(fw.frame(1600), "resumed");
assert.equal(fw.frame(1633), null);
assert.equal(fw.stalled, false);
assert.ok(h.STALL_MS + 250 < 2000, "the interruption must show within 2 s of the last frame");

const now = Date.UTC(2026, 0, 2, 3, 4, 5);
assert.equal(h.retryAfterMs("10", now), 10000);
assert.equal(h.retryAfterMs(" 3 ", now), 3000);
assert.equal(h.retryAfterMs("0", now), 1000);
assert.equal(h.retryAfterMs("999999", now), 600000);
assert.equal(h.retryAfterMs(new Date(now + 30000).toUTCString(), now), 30000);
assert.equal(h.retryAfterMs(null, now), null);
assert.equal(h.retryAfterMs("soon", now), null);

const link = '<stun:stun.example.net:3478>; rel="ice-server", ' +
  '<turn:turn.example.net?transport=udp>; rel="ice-server"; username="u"; credential="p,\\"q\\";x"; credential-type="password", ' +
  '<http://example.net/next>; rel=next, <turns:t.example.net:5349>; rel="ice-server"';
assert.deepEqual(h.iceServersFromLinks(link), [
  { urls: "stun:stun.example.net:3478" },
  { urls: "turn:turn.example.net?transport=udp", username: "u", credential: 'p,"q";x' },
  { urls: "turns:t.example.net:5349" },
]);
assert.deepEqual(h.iceServersFromLinks(null), []);
assert.deepEqual(h.iceServersFromLinks("garbage, <stun:x"), []);

const c = (mimeType, sdpFmtpLine) => (sdpFmtpLine ? { mimeType, sdpFmtpLine } : { mimeType });
const order = h.orderCodecs([
  c("video/VP8"),
  c("video/rtx"),
  c("video/H264", "level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f"),
  c("video/H264", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f"),
  c("video/H264", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"),
  c("video/AV1"),
]).map((x) => x.mimeType + " " + (x.sdpFmtpLine || ""));
assert.deepEqual(order, [
  "video/H264 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
  "video/H264 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f",
  "video/H264 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f",
  "video/VP8 ",
  "video/rtx ",
  "video/AV1 ",
]);
console.log("ok");
`

func TestWHEPHelpers(t *testing.T) {
	node := nodeBin(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "whep.js"), []byte(helpersSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.js"), []byte(helperChecks), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "check.js")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("whep.js helper checks failed: %v\n%s", err, out)
	}
}

// audioChecks exercises the DOM-free sound helpers in whep.js. The answers
// are shaped like pion's: an accepted section carries a mid listed in the
// BUNDLE group, a rejected one has port 0 and neither.
const audioChecks = `
const assert = require("node:assert/strict");
const h = require("./whep.js");

const head = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n";
const video = "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendonly\r\na=rtpmap:102 H264/90000\r\n";
const audio = (port, mid, dir) => "m=audio " + port + " UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n" +
  (mid === null ? "" : "a=mid:" + mid + "\r\n") + (dir ? "a=" + dir + "\r\n" : "") + "a=rtpmap:111 opus/48000/2\r\n";
const answer = (group, ...sections) => head + (group ? "a=group:" + group + "\r\n" : "") + video + sections.join("");

const cases = [
  ["audio sendonly", answer("BUNDLE 0 1", audio(9, 1, "sendonly")), true],
  ["audio sendrecv", answer("BUNDLE 0 1", audio(9, 1, "sendrecv")), true],
  ["no direction means sendrecv", answer("BUNDLE 0 1", audio(9, 1, "")), true],
  ["LF line ends", answer("BUNDLE 0 1", audio(9, 1, "sendonly")).replace(/\r\n/g, "\n"), true],
  ["port 0 but bundled (RFC 8843)", answer("BUNDLE 0 1", audio(0, 1, "sendonly")), true],
  ["audio second of two, first rejected", answer("BUNDLE 0 2", audio(0, null, ""), audio(9, 2, "sendonly")), true],
  ["rejected like pion: port 0, no mid", answer("BUNDLE 0", "m=audio 0 UDP/TLS/RTP/SAVPF 0\r\nc=IN IP4 0.0.0.0\r\n"), false],
  ["port 0 with a mid outside BUNDLE", answer("BUNDLE 0", audio(0, 1, "sendonly")), false],
  ["port 0 without any BUNDLE group", answer("", audio(0, 1, "sendonly")), false],
  ["audio inactive", answer("BUNDLE 0 1", audio(9, 1, "inactive")), false],
  ["audio recvonly (server would listen)", answer("BUNDLE 0 1", audio(9, 1, "recvonly")), false],
  ["session-level inactive", head + "a=inactive\r\na=group:BUNDLE 0 1\r\n" + video + audio(9, 1, ""), false],
  ["no audio section", answer("BUNDLE 0"), false],
  ["video only, sendonly video is not audio", head + video, false],
  ["empty", "", false],
  ["not a string", null, false],
];
for (const [name, sdp, want] of cases) assert.equal(h.sdpHasAudio(sdp), want, name);

class Store {
  constructor(init) { this.m = new Map(Object.entries(init || {})); }
  getItem(k) { return this.m.has(k) ? this.m.get(k) : null; }
  setItem(k, v) { this.m.set(k, String(v)); }
}
const throwing = { getItem() { throw new Error("SecurityError"); }, setItem() { throw new Error("QuotaExceededError"); } };
assert.equal(h.loadSoundPref(new Store()), false, "nothing stored: muted");
assert.equal(h.loadSoundPref(new Store({ [h.SOUND_KEY]: "on" })), true);
assert.equal(h.loadSoundPref(new Store({ [h.SOUND_KEY]: "off" })), false);
assert.equal(h.loadSoundPref(new Store({ [h.SOUND_KEY]: "garbage" })), false);
assert.equal(h.loadSoundPref(null), false);
assert.equal(h.loadSoundPref(throwing), false);
const st = new Store();
h.saveSoundPref(st, true);
assert.equal(st.getItem(h.SOUND_KEY), "on");
assert.equal(h.loadSoundPref(st), true, "a saved choice reads back");
h.saveSoundPref(st, false);
assert.equal(h.loadSoundPref(st), false);
h.saveSoundPref(throwing, true);
h.saveSoundPref(null, true);

assert.equal(h.soundButtonLabel(false, true), "");
assert.equal(h.soundButtonLabel(false, false), "");
assert.equal(h.soundButtonLabel(true, true), "Unmute");
assert.equal(h.soundButtonLabel(true, false), "Mute");

// media is a stand-in for the video element; policy says whether the
// browser lets play() start in the given muted state.
const err = (name) => Object.assign(new Error(name), { name });
const media = (policy) => ({
  muted: true, plays: [],
  play() {
    this.plays.push(this.muted);
    const r = policy(this.muted);
    return r === true ? Promise.resolve() : Promise.reject(err(r));
  },
});

(async () => {
  const soundAllowed = () => true;
  const mutedOnly = (muted) => muted || "NotAllowedError";
  const nothing = () => "NotAllowedError";

  let m = media(soundAllowed);
  assert.equal(await h.startPlayback(m, true), "sound");
  assert.deepEqual([m.plays, m.muted], [[false], false]);

  m = media(mutedOnly);
  m.muted = false;
  assert.equal(await h.startPlayback(m, false), "muted", "no sound wanted: play muted");
  assert.deepEqual([m.plays, m.muted], [[true], true]);

  m = media(mutedOnly);
  assert.equal(await h.startPlayback(m, true), "muted", "refused with sound: fall back to muted");
  assert.deepEqual([m.plays, m.muted], [[false, true], true]);

  m = media(nothing);
  assert.equal(await h.startPlayback(m, true), "blocked");
  m = media(nothing);
  assert.equal(await h.startPlayback(m, false), "blocked");
  assert.deepEqual(m.plays, [true]);

  m = media(() => "AbortError");
  assert.equal(await h.startPlayback(m, true), "interrupted", "a new load is not a refusal");
  assert.deepEqual([m.plays, m.muted], [[false], false]);

  // The viewer unmuted (a newer call) while the first play() was pending:
  // its late refusal must leave the sound on.
  m = media(mutedOnly);
  let current = true;
  const p = h.startPlayback(m, true, () => current);
  current = false;
  m.muted = false;
  assert.equal(await p, "interrupted");
  assert.deepEqual([m.plays, m.muted], [[false], false]);

  console.log("ok");
})().catch((e) => { console.error(e); process.exit(1); });
`

func TestAudioHelpers(t *testing.T) {
	runNode(t, map[string]string{"whep.js": helpersSrc, "check.js": audioChecks}, "check.js")
}

// runNode writes files into a temporary directory and runs node on main
// there; the test fails with node's output unless it exits 0.
func runNode(t *testing.T, files map[string]string, main string) {
	t.Helper()
	node := nodeBin(t)
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, main)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", main, err, out)
	}
}

// refusalChecks: what the page says, and when it asks again, for every
// answer of the WHEP endpoint that made no session (pkg/whep/problem.go).
// A viewer whose browser cannot decode the path's codec reads the
// server's detail and is asked again slowly; the request's own faults are
// never retried; load and rate limits wait for Retry-After.
const refusalChecks = `
const assert = require("node:assert/strict");
const h = require("./whep.js");

const hevc = "This stream is H.265 (HEVC, Main), which this browser cannot play over WebRTC: its offer has no H265/90000 video (it offered VP8, VP9, H264, AV1). Use Safari 17+ or Chrome 136+ with hardware HEVC decoding, or publish H.264 (ffmpeg -c:v libx264 -bf 0; OBS: x264 encoder). This path passes video through (video: passthrough): the operator can set video: auto for it, and the server converts H.265 to H.264 for browsers like this one";
const cases = [
  // [status, slug, detail, token, want state, want text (a RegExp or exact), want retry]
  [409, "video-codec-unsupported", hevc, false, "unsupported", hevc, "slow"],
  [409, "video-codec-unsupported", "the path publishes H.265", false, "unsupported", "The path publishes H.265", "slow"],
  [409, "publisher-refused", "its video has B-frames", false, "problem", "The stream cannot be played: its video has B-frames", "backoff"],
  [409, "no-decodable-picture", "no IDR", false, "problem", "The stream cannot be played: no IDR", "backoff"],
  [409, "no-publisher", "no stream is being published", false, "waiting", "Waiting for the stream — no stream is being published", "backoff"],
  [404, "source-refused", "origin has none", false, "waiting", "Waiting for the stream…", "backoff"],
  [404, "", "", false, "waiting", "Waiting for the stream…", "backoff"],
  [404, "invalid-path", "path \"a//b\" has an empty segment", false, "error", /^No such stream: path "a\/\/b"/, "none"],
  [400, "no-h264", "VP8 only", false, "error", h.NO_H264, "none"],
  [400, "bad-offer", "offer has no video m-section", false, "error", "Error: offer has no video m-section", "none"],
  [415, "unsupported-media-type", "send application/sdp", false, "error", "Error: send application/sdp", "none"],
  [413, "body-too-large", "over 64 KiB", false, "error", "Error: over 64 KiB", "none"],
  [401, "unauthorized", "a valid token is needed", false, "error", /needs a token: open this page with \?token=YOUR_TOKEN/, "none"],
  [401, "unauthorized", "a valid token is needed", true, "error", /token in this page's address was not accepted: a valid token is needed/, "none"],
  [403, "forbidden", "not on the list", false, "error", "Not allowed to watch this stream: not on the list", "none"],
  [429, "throttled", "too many wrong tokens", false, "retrying", "Too many wrong tokens from this address", "after"],
  [429, "offer-rate", "too many offers", false, "retrying", "Too many attempts from this address", "after"],
  [503, "path-full", "viewer limit", false, "full", "This stream has as many viewers as it allows", "after"],
  [503, "server-full", "at capacity", false, "full", "Server full", "after"],
  [503, "handshake-limit", "too many offers waiting", false, "full", "Server busy", "after"],
  [503, "unavailable", "shutting down", false, "full", "Server not available", "after"],
  [500, "internal", "cannot answer", false, "retrying", "Error: cannot answer", "after"],
  [502, "source-unavailable", "origin down", false, "retrying", "Error: origin down", "after"],
  [504, "source-timeout", "origin slow", false, "retrying", "Error: origin slow", "after"],
  [502, "", "", false, "retrying", "Error: 502 Bad Gateway", "after"],
];
for (const [status, slug, detail, token, state, text, retry] of cases) {
  const got = h.refusalPlan(status, "Bad Gateway", { slug, text: detail, retryAfter: null }, token);
  const name = status + " " + slug;
  assert.equal(got.state, state, name);
  assert.equal(got.retry, retry, name);
  if (text instanceof RegExp) assert.match(got.text, text, name);
  else assert.equal(got.text, text, name);
}
assert.ok(h.CODEC_RETRY_MS >= 10000 && h.CODEC_RETRY_MS <= 30000, "a codec refusal is asked again every 10 to 30 s");
console.log("ok");
`

func TestRefusalPlans(t *testing.T) {
	runNode(t, map[string]string{"whep.js": helpersSrc, "check.js": refusalChecks}, "check.js")
}
