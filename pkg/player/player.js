// srtwhep player: a WHEP client (draft-ietf-wish-whep) in plain JavaScript.
// The page at /PATH plays the WHEP endpoint /PATH/whep; ?token=T is sent as
// "Authorization: Bearer T". The helpers and constants come from whep.js,
// which the page inlines in front of this file inside one function scope.

const video = document.getElementById("v");
const statusEl = document.getElementById("status");
const statsEl = document.getElementById("stats");
const statsBtn = document.getElementById("statsbtn");
const unmuteBtn = document.getElementById("unmute");

const token = new URL(location.href).searchParams.get("token");
const endpoint = whepEndpoint(location.href);
// endpointNow is where the next session is made: endpoint, until a
// reconnect event names another (events.js).
let endpointNow = endpoint;

let cur = null; // the attempt in flight: {pc, session, timers, connected, stream, answered}
let state = "connecting";
let failures = 0;
// refusedTries counts the refusals in a row that said when to come back
// (retryDelayMs); gaveUp: there were RETRY_MAX_TRIES of them, and the page
// waits for a click before it asks again.
let refusedTries = 0;
let gaveUp = false;
let retryTimer = 0;
let unloading = false;
let firstFrameMs = null;
// playedSince404: frames were shown since the last "no stream yet" (409,
// or 404 from an edge or an older server), so the next one
// means the stream just went away, not that it never came: the back-off
// starts again from 1 s instead of going on from where an earlier outage
// left it.
let playedSince404 = false;
// STEADY_STATES keep their text while the page asks again: the answer
// will most likely be the same.
const STEADY_STATES = ["waiting", "stalled", "problem", "unsupported"];

// Sound: the page autoplays muted (browsers block unmuted autoplay) unless
// the viewer chose sound on an earlier visit; then it tries with sound and
// falls back to muted if the browser refuses.
const soundStore = (() => {
  try { return window.localStorage; } catch (e) { return null; } // blocked storage throws on access
})();
let soundOn = loadSoundPref(soundStore);
let hasAudio = false; // decided afresh by every answer: publishers gain and lose audio
let mutedByUser = false; // pressed Mute here: a later stray click must not undo it
let playSeq = 0;

function setStatus(next, text) {
  state = next;
  statusEl.className = next;
  statusEl.textContent = text;
}

function headers(extra) {
  const h = Object.assign({}, extra);
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

function timedFetch(url, init, ms) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  return fetch(url, Object.assign({ cache: "no-store", signal: ac.signal }, init))
    .finally(() => clearTimeout(t));
}

// deleteSession uses keepalive so the DELETE survives the page unloading.
function deleteSession(url) {
  try {
    fetch(url, { method: "DELETE", headers: headers({}), keepalive: true }).catch(() => {});
  } catch (e) { /* unload in progress: nothing more to do */ }
}

// release frees everything an attempt holds; safe to call twice.
function release(att) {
  if (!att) return;
  if (att.keep) {
    const old = att.keep;
    att.keep = null;
    release(old);
  }
  closeEvents(att);
  unwarm(att);
  att.timers.forEach(clearTimeout);
  att.timers = [];
  clearInterval(att.watchTimer);
  att.watchTimer = 0;
  if (att.pc) {
    try { att.pc.close(); } catch (e) { /* already closed */ }
    att.pc = null;
  }
  if (att.session) {
    deleteSession(att.session);
    att.session = null;
  }
}

// teardown also forgets whether there was audio: until the next answer
// says so there is nothing to unmute.
function teardown() {
  const att = cur;
  cur = null;
  release(att);
  setHasAudio(false);
  drawQuality();
}

// retryIn connects again after ms; label(secondsLeft), if given, redraws
// the status every second until then.
function retryIn(ms, label) {
  clearTimeout(retryTimer);
  if (unloading) return;
  const until = performance.now() + ms;
  const tick = () => {
    const left = until - performance.now();
    if (left <= 0) { retryTimer = 0; connect(); return; }
    if (label) label(Math.ceil(left / 1000));
    retryTimer = setTimeout(tick, left % 1000 || 1000);
  };
  tick();
}

function nextBackoff() { return backoffMs(failures++); }

// drop ends a live attempt and schedules the next one.
function drop(att, reason) {
  if (cur !== att || abandonMove(att)) return;
  const interrupted = state === "stalled";
  teardown();
  // A session the server ended after the picture stalled is the same
  // outage: keep saying so rather than flash a connection error.
  if (interrupted) retryIn(nextBackoff(), () => setStatus("stalled", INTERRUPTED));
  else retryIn(nextBackoff(), (s) => setStatus("retrying", reason + " — retrying in " + s + " s"));
}

async function fetchIceServers() {
  // The server writes its ICE servers into the page unless some carry
  // credentials (TURN): those it lists only on the endpoint, to a viewer
  // with a valid token, so the OPTIONS sends ours. A copy of the page
  // hosted elsewhere asks the endpoint too (one more round trip).
  const meta = document.querySelector('meta[name="srtwhep-ice-servers"]');
  if (meta) {
    try { return JSON.parse(meta.content); } catch (e) { /* fall back to OPTIONS */ }
  }
  try {
    const resp = await timedFetch(endpoint, { method: "OPTIONS", headers: headers() }, OPTIONS_TIMEOUT_MS);
    return resp.ok ? iceServersFromLinks(resp.headers.get("Link")) : [];
  } catch (e) {
    return []; // no OPTIONS support: host candidates still work
  }
}

function newPeerConnection(iceServers) {
  const base = { bundlePolicy: "max-bundle" };
  if (iceServers.length) {
    try {
      return new RTCPeerConnection(Object.assign({ iceServers }, base));
    } catch (e) {
      console.warn("srtwhep: ignoring the advertised ICE servers:", e);
    }
  }
  return new RTCPeerConnection(base);
}

function preferH264(tr) {
  if (typeof tr.setCodecPreferences !== "function" || !window.RTCRtpReceiver ||
      typeof RTCRtpReceiver.getCapabilities !== "function") return;
  const caps = RTCRtpReceiver.getCapabilities("video");
  if (!caps || !caps.codecs || !caps.codecs.some((c) => /^video\/h264$/i.test(c.mimeType))) return;
  try {
    tr.setCodecPreferences(orderCodecs(caps.codecs));
  } catch (e) {
    console.warn("srtwhep: setCodecPreferences failed, using the browser's order:", e);
  }
}

function gathered(pc, capMs) {
  return new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") { resolve(); return; }
    const done = () => {
      clearTimeout(t);
      pc.removeEventListener("icegatheringstatechange", check);
      resolve();
    };
    const check = () => { if (pc.iceGatheringState === "complete") done(); };
    const t = setTimeout(done, capMs);
    pc.addEventListener("icegatheringstatechange", check);
  });
}

// connect makes a new session at endpointNow. With keep (a reconnect
// event's move, events.js) the attempt keep stays playing until the new
// one shows its first frame.
async function connect(keep) {
  if (unloading) return;
  clearTimeout(retryTimer);
  const prev = keep && keep.timers ? keep : null;
  if (!prev) teardown();
  const att = { pc: null, session: null, timers: [], connected: false, stream: null, answered: false,
    keep: prev, endpoint: endpointNow, viewers: prev ? prev.viewers : null };
  cur = att;
  // While the publisher is absent, or its stream cannot be played here,
  // keep saying so instead of flickering.
  if (!prev && !STEADY_STATES.includes(state)) setStatus("connecting", "Connecting…");
  const stale = () => {
    if (cur === att) return false;
    release(att);
    return true;
  };
  try {
    const iceServers = await fetchIceServers();
    if (stale()) return;
    const pc = newPeerConnection(iceServers);
    att.pc = pc;
    preferH264(pc.addTransceiver("video", { direction: "recvonly" }));
    // Always ask for audio: only the answer knows whether the stream has it.
    pc.addTransceiver("audio", { direction: "recvonly" });
    pc.addEventListener("track", (ev) => onTrack(att, ev));
    pc.addEventListener("connectionstatechange", () => onConnectionState(att, pc));
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc, GATHER_CAP_MS);
    if (stale()) return;
    const resp = await timedFetch(att.endpoint, {
      method: "POST",
      headers: headers({ "Content-Type": "application/sdp" }),
      body: pc.localDescription.sdp,
    }, FETCH_TIMEOUT_MS);
    if (resp.status !== 201 && resp.status !== 200) {
      await refused(att, resp);
      return;
    }
    refusedTries = 0;
    const loc = resp.headers.get("Location");
    if (loc) att.session = new URL(loc, att.endpoint).href;
    att.sseEntry = sseLink(resp.headers.get("Link"), att.endpoint);
    att.layerURL = layerLink(resp.headers.get("Link"), att.endpoint);
    const answer = await resp.text();
    if (stale()) return;
    // Decided before the tracks arrive, so the first play() already knows
    // whether to try with sound.
    setHasAudio(sdpHasAudio(answer));
    await pc.setRemoteDescription({ type: "answer", sdp: answer });
    if (stale()) return;
    att.answered = true;
    openEvents(att);
    fetchLayers(att);
    watchTransport(att, pc);
    attach(att);
    att.timers.push(setTimeout(() => {
      if (!att.connected) drop(att, "Connection timed out");
    }, CONNECT_TIMEOUT_MS));
  } catch (err) {
    if (cur !== att) { release(att); return; }
    console.warn("srtwhep:", err);
    drop(att, err && err.name === "AbortError" ? "Server did not answer" : "Connection failed");
  }
}

// refused handles a POST that did not create a session. The server's
// problem detail is what the viewer reads: it says what is wrong.
async function refused(att, resp) {
  let body = "";
  try { body = await resp.text(); } catch (e) { /* no body */ }
  const p = parseProblem(resp.headers.get("Content-Type"), body);
  if (cur !== att) { release(att); return; }
  if (abandonMove(att)) return;
  teardown();
  // Retry-After is only readable cross-origin if the server exposes it;
  // the problem body repeats it as retry_after.
  let after = retryAfterMs(resp.headers.get("Retry-After"), Date.now());
  if (after === null && p.retryAfter !== null) after = retryAfterMs(String(Math.round(p.retryAfter)), Date.now());
  const plan = refusalPlan(resp.status, resp.statusText, p, !!token);
  if (STEADY_STATES.includes(plan.state)) {
    // Frames shown since the last "no stream yet" mean the stream just
    // went away: the back-off starts again from 1 s.
    if (plan.state === "waiting" && playedSince404) failures = 0;
    playedSince404 = false;
  }
  switch (plan.retry) {
    case "none":
      setStatus(plan.state, plan.text);
      break;
    case "backoff":
      setStatus(plan.state, plan.text);
      retryIn(Math.max(after || 0, nextBackoff()));
      break;
    case "slow":
      setStatus(plan.state, plan.text);
      retryIn(Math.max(after || 0, CODEC_RETRY_MS));
      break;
    default: { // "after": as the server asks (else the back-off), spread by jitter, counting down
      const ms = retryDelayMs(after, ++refusedTries, failures, Math.random());
      if (ms === null) {
        gaveUp = true;
        setStatus(plan.state, plan.text + " — click to try again");
        return;
      }
      if (after === null) failures++;
      retryIn(ms, (s) => setStatus(plan.state, plan.text + " — retrying in " + s + " s"));
      return;
    }
  }
  refusedTries = 0;
}

function onConnectionState(att, pc) {
  if (cur !== att) return;
  const s = pc.connectionState;
  clearTimeout(att.grace);
  if (s === "connected") {
    att.connected = true;
  } else if (s === "disconnected") {
    att.grace = setTimeout(() => drop(att, "Connection lost"), DISCONNECT_GRACE_MS);
    att.timers.push(att.grace);
  } else if (s === "failed" || s === "closed") {
    drop(att, "Connection lost"); // "failed" never heals without an ICE restart
  }
}

// onTrack collects the attempt's tracks into one MediaStream, so audio and
// video play from one element and the browser can keep them in sync.
function onTrack(att, ev) {
  const track = ev.track;
  if (cur !== att || (track.kind !== "video" && track.kind !== "audio")) return;
  if (!att.stream) att.stream = new MediaStream();
  att.stream.addTrack(track);
  if (track.kind === "audio") {
    setHasAudio(true);
    // Video can go on without sound; only a lost video track ends the attempt.
    track.addEventListener("ended", () => { if (cur === att) setHasAudio(false); });
  } else {
    track.addEventListener("ended", () => drop(att, "Stream ended"));
  }
  const seen = () => {
    if (track.kind === "video" && firstFrameMs === null) firstFrameMs = performance.now();
    if (cur !== att) return;
    failures = 0;
    playedSince404 = true;
    setStatus("playing", liveText(att.viewers));
    if (track.kind === "video") watchFrames(att);
  };
  if (track.kind === "video" && typeof video.requestVideoFrameCallback === "function") video.requestVideoFrameCallback(seen);
  else video.addEventListener("playing", seen, { once: true });
  if (att.answered) attach(att);
}

// attach hands the attempt's stream to the element once, after the answer
// has delivered all its tracks, so playback starts with every track rather
// than relying on the element noticing a track added while it plays.
function attach(att) {
  if (cur !== att || !att.stream || video.srcObject === att.stream) return;
  if (att.keep) {
    warmThenSwap(att);
    return;
  }
  video.srcObject = att.stream;
  play();
}

function play() {
  const seq = ++playSeq;
  const current = () => seq === playSeq;
  startPlayback(video, hasAudio && soundOn, current).then((r) => {
    if (!current()) return;
    if (r === "blocked") setStatus("paused", "Click the video to play");
    syncSound();
  });
}

function setHasAudio(v) {
  hasAudio = v;
  syncSound();
}

function syncSound() {
  const label = soundButtonLabel(hasAudio, video.muted);
  unmuteBtn.hidden = !label;
  if (label && unmuteBtn.textContent !== label) unmuteBtn.textContent = label;
}

// setSound records the viewer's choice and applies it at once, inside the
// click, which is what lets the browser allow sound.
function setSound(on) {
  soundOn = on;
  mutedByUser = !on;
  saveSoundPref(soundStore, on);
  if (!on) {
    playSeq++; // a pending fallback must not report over the viewer's choice
    video.muted = true;
    syncSound();
    return;
  }
  video.muted = false;
  syncSound(); // volumechange arrives a task later
  if (video.srcObject) play();
}

function leave() {
  unloading = true;
  clearTimeout(retryTimer);
  teardown();
}

// collect gathers what the stats line and window.srtwhepStats report.
async function collect() {
  const pc = cur && cur.pc;
  const out = {
    state, status: statusEl.textContent,
    ice: pc ? pc.iceConnectionState : "new",
    connection: pc ? pc.connectionState : "new",
    videoWidth: video.videoWidth, videoHeight: video.videoHeight,
    framesDecoded: 0, frameWidth: 0, frameHeight: 0, framesPerSecond: 0,
    packetsReceived: 0, packetsLost: 0, bytesReceived: 0,
    rttMs: null, codec: "",
    firstFrameMs: firstFrameMs === null ? null : Math.round(firstFrameMs),
    hasAudio, muted: video.muted, soundPref: soundOn,
    audioPacketsReceived: 0, audioPacketsLost: 0, audioBytesReceived: 0,
    totalSamplesReceived: 0, concealedSamples: 0, silentConcealedSamples: 0,
    audioLevel: 0, audioCodec: "",
    events: !!(cur && cur.events), viewers: cur ? cur.viewers : null,
    session: cur ? cur.session : null, endpoint: endpointNow,
  };
  Object.assign(out, layerStats());
  if (!pc) return out;
  let report;
  try { report = await pc.getStats(); } catch (e) { return out; }
  let pair = null;
  report.forEach((s) => {
    if (s.type === "inbound-rtp" && s.kind === "video") {
      out.framesDecoded = s.framesDecoded || 0;
      out.frameWidth = s.frameWidth || 0;
      out.frameHeight = s.frameHeight || 0;
      out.framesPerSecond = s.framesPerSecond || 0;
      out.packetsReceived = s.packetsReceived || 0;
      out.packetsLost = s.packetsLost || 0;
      out.bytesReceived = s.bytesReceived || 0;
      const c = s.codecId && report.get(s.codecId);
      if (c) out.codec = c.mimeType + (c.sdpFmtpLine ? " " + c.sdpFmtpLine : "");
    } else if (s.type === "inbound-rtp" && s.kind === "audio") {
      out.audioPacketsReceived = s.packetsReceived || 0;
      out.audioPacketsLost = s.packetsLost || 0;
      out.audioBytesReceived = s.bytesReceived || 0;
      out.totalSamplesReceived = s.totalSamplesReceived || 0;
      out.concealedSamples = s.concealedSamples || 0;
      out.silentConcealedSamples = s.silentConcealedSamples || 0;
      out.audioLevel = s.audioLevel || 0;
      const c = s.codecId && report.get(s.codecId);
      if (c) out.audioCodec = c.mimeType + (c.sdpFmtpLine ? " " + c.sdpFmtpLine : "");
    } else if (s.type === "transport" && s.selectedCandidatePairId) {
      pair = report.get(s.selectedCandidatePairId) || pair;
    } else if (!pair && s.type === "candidate-pair" && s.nominated && s.state === "succeeded") {
      pair = s;
    }
  });
  if (pair && typeof pair.currentRoundTripTime === "number") out.rttMs = Math.round(pair.currentRoundTripTime * 1000);
  return out;
}

let statsTimer = 0;
let prev = null;
async function drawStats() {
  const s = await collect();
  const now = performance.now();
  const bytes = s.bytesReceived + s.audioBytesReceived;
  let kbps = "–";
  if (prev && bytes >= prev.bytes && now > prev.t) {
    kbps = Math.round((bytes - prev.bytes) * 8 / (now - prev.t)) + " kbit/s";
  }
  prev = { t: now, bytes };
  const res = s.videoWidth ? s.videoWidth + "×" + s.videoHeight : "–";
  const fps = s.framesPerSecond ? Math.round(s.framesPerSecond) + " fps" : "– fps";
  const rtt = s.rttMs === null ? "–" : s.rttMs + " ms";
  const sound = !s.hasAudio ? "no sound" : s.muted ? "sound muted" : "sound on";
  const layer = s.layerLabel ? "  " + s.layerLabel : "";
  statsEl.textContent = res + layer + "  " + fps + "  " + kbps + "  RTT " + rtt + "  " + sound;
}

statsBtn.addEventListener("click", () => {
  const show = statsEl.hidden;
  statsEl.hidden = !show;
  statsBtn.setAttribute("aria-pressed", String(show));
  clearInterval(statsTimer);
  prev = null;
  if (show) {
    drawStats();
    statsTimer = setInterval(drawStats, 1000);
  }
});

unmuteBtn.addEventListener("click", () => setSound(video.muted));
video.addEventListener("volumechange", syncSound);
// One click or tap anywhere unmutes; the buttons in the bar act for
// themselves (Stats must not turn the sound on).
document.addEventListener("click", (ev) => {
  const t = ev.target;
  if (t && typeof t.closest === "function" && t.closest("#bar")) return;
  if (gaveUp) {
    gaveUp = false;
    refusedTries = 0;
    connect();
    return;
  }
  if (hasAudio && video.muted && !mutedByUser) setSound(true);
  else if (video.paused && video.srcObject) play();
});
syncSound();

addEventListener("pagehide", leave);
addEventListener("beforeunload", leave);
// Back from the back/forward cache: the old session was deleted on pagehide.
addEventListener("pageshow", (ev) => {
  if (ev.persisted && unloading) {
    unloading = false;
    failures = 0;
    refusedTries = 0;
    gaveUp = false;
    connect();
  }
});

window.srtwhepStats = collect;

connect();
