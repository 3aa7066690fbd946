// WHEP helpers of the srtwhep player that touch no DOM. In the page they
// share one function scope with player.js; under Node (the tests) this file
// exports them instead.

const BACKOFF_MAX_MS = 10000;
const GATHER_CAP_MS = 1000; // send the offer with whatever candidates exist by then
const DISCONNECT_GRACE_MS = 3000; // "disconnected" often heals by itself
const CONNECT_TIMEOUT_MS = 15000;
const FETCH_TIMEOUT_MS = 10000;
const OPTIONS_TIMEOUT_MS = 3000;
// STALL_MS without a new frame means the publisher is gone (or the path is
// between two publishers): say so well within 2 s instead of showing a
// frozen picture as "Playing". 30 fps video shows a frame every 33 ms.
const STALL_MS = 1200;
const STALL_CHECK_MS = 250;
// While the picture is stalled, the page asks the server that holds the
// session every PROBE_EVERY_MS whether it still answers at all; a probe
// without an answer within PROBE_TIMEOUT_MS proves nothing.
const PROBE_EVERY_MS = 2000;
const PROBE_TIMEOUT_MS = 3000;

// whepEndpoint is the page URL + "/whep", without query or fragment, so it
// keeps any reverse-proxy prefix the page was served under.
function whepEndpoint(href) {
  const u = new URL(href);
  return new URL(u.pathname.replace(/\/+$/, "") + "/whep", u).href;
}

// backoffMs: 1 s, 2 s, 4 s, 8 s, then 10 s for ever.
function backoffMs(failures) {
  return Math.min(1000 * Math.pow(2, Math.min(failures, 10)), BACKOFF_MAX_MS);
}

// The retry policy for refusals that say when to come back (429, 503 and
// other server errors: a rate or a capacity limit). A crowd behind one
// address (a venue's NAT, docker-proxy, a proxy not in trustedProxies) is
// refused together and told the same Retry-After; coming back exactly then
// would bring it back together, so each page waits Retry-After stretched
// by up to RETRY_JITTER of it again, at random. After RETRY_MAX_TRIES such
// refusals in a row (about 40 s of 429s at Retry-After 1, some 6 min of
// 503s at 10) the page stops asking by itself and says so; a click asks
// again. pkg/player/retry.go mirrors these for Go clients (the crowd test
// in internal/hostile), and a test keeps the two equal.
const RETRY_JITTER = 0.5;
const RETRY_MAX_TRIES = 30;

// retryDelayMs is the wait after the tries-th refusal in a row (from 1)
// that says when to come back, or null once the page should stop asking:
// afterMs is the server's Retry-After (null without one: then the back-off
// for failures so far), stretched by RETRY_JITTER times rand (in [0, 1)).
function retryDelayMs(afterMs, tries, failures, rand) {
  if (tries >= RETRY_MAX_TRIES) return null;
  const base = afterMs === null ? backoffMs(failures) : afterMs;
  return Math.round(base * (1 + RETRY_JITTER * rand));
}

// retryAfterMs reads a Retry-After header (seconds or an HTTP date), or
// returns null when there is none or it is unreadable.
function retryAfterMs(value, nowMs) {
  if (!value) return null;
  let s;
  if (/^\s*\d+\s*$/.test(value)) s = parseInt(value, 10);
  else s = (Date.parse(value) - nowMs) / 1000;
  if (!isFinite(s)) return null;
  return Math.round(Math.min(Math.max(s, 1), 600) * 1000);
}

// NO_H264 is what the page says when the server found no H.264 in the
// browser's offer (problem type .../no-h264): retrying cannot help, the
// viewer has to change the browser.
const NO_H264 = "This browser offers no H.264 for WebRTC: enable the OpenH264 plugin (Firefox: about:addons → Plugins) or use another browser";

// PROBLEM_TEXT_MAX bounds the text shown from an error answer: long
// enough for a refusal's fixes for ffmpeg, OBS and GStreamer, short
// enough that a misbehaving server cannot fill the page.
const PROBLEM_TEXT_MAX = 1000;

// CODEC_RETRY_MS is how often the page asks again when the path's video
// is a codec this browser cannot decode: only a change at the publisher
// or in the server's config fixes that, which takes a person minutes,
// so asking every second would only fill the server's log.
const CODEC_RETRY_MS = 20000;

// refusalPlan decides what the page says about a POST that made no
// session (status, and the problem parseProblem read from it), and when
// it asks again: retry is "none" (the viewer or the URL must change),
// "backoff" (the growing back-off, never sooner than Retry-After),
// "slow" (CODEC_RETRY_MS, never sooner than Retry-After) or "after"
// (Retry-After, else the back-off, with a countdown after the text).
// hasToken says whether the page sent a token.
function refusalPlan(status, statusText, p, hasToken) {
  const text = p.text || (status + " " + (statusText || "")).trim();
  const plan = (state, shown, retry) => ({ state, text: shown, retry });
  switch (p.slug) {
    case "no-h264":
      return plan("error", NO_H264, "none");
    case "video-codec-unsupported":
      // The server's detail names the codec, what the browser offered and
      // the fixes; it is the whole message.
      return plan("unsupported", capitalize(text), "slow");
    case "publisher-refused":
    case "no-decodable-picture":
      // The publisher sends what no browser can show: the person at the
      // encoder must change a setting, so say so instead of "Waiting for
      // the stream…", and keep asking, to play as soon as it is fixed.
      if (status === 409) return plan("problem", "The stream cannot be played: " + text, "backoff");
      break;
    case "invalid-path":
      return plan("error", "No such stream: " + text, "none");
    case "unauthorized":
      return plan("error", hasToken
        ? "The token in this page's address was not accepted: " + text
        : "This stream needs a token: open this page with ?token=YOUR_TOKEN added to its address", "none");
    case "forbidden":
      return plan("error", "Not allowed to watch this stream: " + text, "none");
    case "throttled":
      return plan("retrying", "Too many wrong tokens from this address", "after");
    case "offer-rate":
      return plan("retrying", "Too many attempts from this address", "after");
    case "path-full":
      return plan("full", "This stream has as many viewers as it allows", "after");
    case "handshake-limit":
      return plan("full", "Server busy", "after");
    case "unavailable":
      return plan("full", "Server not available", "after");
  }
  if (status === 409 || status === 404) {
    // No publisher yet (409, draft-03; 404 from an edge or an older
    // server).
    return plan("waiting", p.text && status === 409 ? "Waiting for the stream — " + p.text : "Waiting for the stream…", "backoff");
  }
  if (status === 503) return plan("full", "Server full", "after");
  if (status === 429) return plan("retrying", "Too many attempts", "after");
  // Any other 4xx: the request itself is wrong and retrying cannot help.
  if (status >= 400 && status < 500) return plan("error", "Error: " + text, "none");
  return plan("retrying", "Error: " + text, "after");
}

function capitalize(s) {
  return s ? s.charAt(0).toUpperCase() + s.slice(1) : s;
}

// parseProblem reads an error answer's body: an RFC 9457 problem
// (application/problem+json) gives its detail (else its title), its type's
// last path segment as slug ("no-publisher", "no-h264", …) and retry_after
// in seconds; any other body is text, trimmed. It never throws.
function parseProblem(contentType, body) {
  const out = { slug: "", text: "", retryAfter: null };
  const text = typeof body === "string" ? body.trim() : "";
  if (/^application\/problem\+json\b/i.test(String(contentType || "").trim())) {
    try {
      const p = JSON.parse(text);
      if (p && typeof p === "object") {
        if (typeof p.type === "string") out.slug = p.type.replace(/\/+$/, "").split("/").pop();
        const d = typeof p.detail === "string" && p.detail.trim() ? p.detail : p.title;
        if (typeof d === "string") out.text = d.trim().slice(0, PROBLEM_TEXT_MAX);
        if (typeof p.retry_after === "number" && isFinite(p.retry_after) && p.retry_after > 0) out.retryAfter = p.retry_after;
        return out;
      }
    } catch (e) { /* not JSON after all: show it as text */ }
  }
  out.text = text.slice(0, PROBLEM_TEXT_MAX);
  return out;
}

// parseLinkHeader splits an RFC 8288 Link field value (several headers
// arrive joined by ", ") into {url, params}; commas inside quoted strings
// and inside <...> do not split.
function parseLinkHeader(value) {
  const links = [];
  const n = value.length;
  let i = 0;
  const ws = () => { while (i < n && (value[i] === " " || value[i] === "\t")) i++; };
  while (i < n) {
    const lt = value.indexOf("<", i);
    if (lt < 0) break;
    const gt = value.indexOf(">", lt + 1);
    if (gt < 0) break;
    const link = { url: value.slice(lt + 1, gt).trim(), params: {} };
    i = gt + 1;
    for (;;) {
      ws();
      if (i >= n) break;
      if (value[i] === ",") { i++; break; }
      if (value[i] !== ";") { i++; continue; } // stray byte: skip it
      i++;
      ws();
      let key = "";
      while (i < n && !"=;, \t".includes(value[i])) key += value[i++];
      ws();
      let val = "";
      if (value[i] === "=") {
        i++;
        ws();
        if (value[i] === '"') {
          i++;
          while (i < n && value[i] !== '"') {
            if (value[i] === "\\" && i + 1 < n) i++;
            val += value[i++];
          }
          i++; // closing quote
        } else {
          while (i < n && !";, \t".includes(value[i])) val += value[i++];
        }
      }
      if (key && !(key.toLowerCase() in link.params)) link.params[key.toLowerCase()] = val;
    }
    links.push(link);
  }
  return links;
}

// iceServersFromLinks keeps the links with rel="ice-server" (RFC 9725 §4.6).
function iceServersFromLinks(value) {
  const out = [];
  for (const l of parseLinkHeader(value || "")) {
    const rels = (l.params.rel || "").toLowerCase().split(/\s+/);
    if (!rels.includes("ice-server") || !/^(stuns?|turns?):/i.test(l.url)) continue;
    const s = { urls: l.url };
    if ("username" in l.params) s.username = l.params.username;
    if ("credential" in l.params) s.credential = l.params.credential;
    out.push(s);
  }
  return out;
}

// orderCodecs puts H.264 with packetization-mode=1 and profile-level-id
// 42e01f first (the safe choice, see DESIGN §4), then other H.264, then
// everything else in the browser's order; rtx and friends stay in the list
// so retransmission keeps working.
function orderCodecs(codecs) {
  const rank = (c) => {
    if (String(c.mimeType).toLowerCase() !== "video/h264") return 3;
    const f = String(c.sdpFmtpLine || "").toLowerCase();
    const pm1 = /(^|;)\s*packetization-mode=1/.test(f);
    if (pm1 && /profile-level-id=42e01f/.test(f)) return 0;
    return pm1 ? 1 : 2;
  };
  return codecs
    .map((c, i) => ({ c, i, r: rank(c) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.c);
}

// sdpHasAudio tells from the server's answer whether it will send audio:
// some m=audio section must be accepted and sending. Rejected means port 0
// and outside every BUNDLE group; a port-0 section listed in a BUNDLE group
// is accepted (RFC 8843 §7.3.1 lets an answerer zero the port of all but
// the tagged section). Sending means a=sendonly or a=sendrecv, where no
// direction at all is sendrecv (RFC 4566), the session-level one if given.
function sdpHasAudio(sdp) {
  if (typeof sdp !== "string") return false;
  const dirs = ["sendonly", "sendrecv", "recvonly", "inactive"];
  const session = [];
  const sections = [];
  let attrs = session;
  for (const raw of sdp.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith("m=")) {
      const f = line.slice(2).split(/\s+/);
      attrs = [];
      sections.push({ media: f[0].toLowerCase(), port: parseInt(f[1], 10), attrs });
    } else if (line.startsWith("a=")) {
      attrs.push(line.slice(2));
    }
  }
  const bundled = new Set();
  for (const a of session) {
    const m = /^group:BUNDLE\b(.*)$/i.exec(a);
    if (m) m[1].trim().split(/\s+/).filter(Boolean).forEach((mid) => bundled.add(mid));
  }
  const direction = (list) => list.find((a) => dirs.includes(a));
  const sessionDir = direction(session) || "sendrecv";
  return sections.some((s) => {
    if (s.media !== "audio") return false;
    if (!(s.port > 0)) {
      const mid = s.attrs.find((a) => a.startsWith("mid:"));
      if (!mid || !bundled.has(mid.slice(4).trim())) return false;
    }
    const dir = direction(s.attrs) || sessionDir;
    return dir === "sendonly" || dir === "sendrecv";
  });
}

// The viewer's last sound choice survives reloads so that someone who
// unmuted once is not asked again; "off" is also stored so that muting
// sticks too. Storage can be missing or throw (disabled, sandboxed, full),
// and then the choice lasts as long as the page.
const SOUND_KEY = "srtwhep.sound";

function loadSoundPref(storage) {
  try {
    return !!storage && storage.getItem(SOUND_KEY) === "on";
  } catch (e) {
    return false;
  }
}

function saveSoundPref(storage, on) {
  try {
    if (storage) storage.setItem(SOUND_KEY, on ? "on" : "off");
  } catch (e) { /* the in-page choice still holds */ }
}

// startPlayback plays media with sound if wanted. Browsers refuse unmuted
// playback without a user gesture (NotAllowedError) but allow it muted, so
// a refusal falls back to muted. isCurrent, if given, says whether this
// call still owns the element: a click that unmuted while the first
// play() was pending must not be muted again by its late refusal.
// Resolves "sound", "muted", "blocked" (not even muted play is allowed) or
// "interrupted" (another load or pause cut play() short, or superseded).
async function startPlayback(media, wantSound, isCurrent) {
  const current = isCurrent || (() => true);
  media.muted = !wantSound;
  try {
    await media.play();
    return wantSound ? "sound" : "muted";
  } catch (e) {
    if (!e || e.name !== "NotAllowedError" || !current()) return "interrupted";
    if (!wantSound) return "blocked";
  }
  media.muted = true;
  try {
    await media.play();
    return "muted";
  } catch (e) {
    return e && e.name === "NotAllowedError" && current() ? "blocked" : "interrupted";
  }
}

// frameWatch turns the times frames were shown into two events: "stalled"
// when none came for stallMs, and "resumed" at the first one after that.
// Each event is reported once.
function frameWatch(stallMs) {
  let last = null;
  let stalled = false;
  return {
    frame(nowMs) {
      last = nowMs;
      if (!stalled) return null;
      stalled = false;
      return "resumed";
    },
    check(nowMs) {
      if (stalled || last === null || nowMs - last < stallMs) return null;
      stalled = true;
      return "stalled";
    },
    get stalled() { return stalled; },
  };
}

// soundButtonLabel is what the sound button says, or "" to hide it: a
// stream without audio offers nothing to unmute.
function soundButtonLabel(hasAudio, muted) {
  if (!hasAudio) return "";
  return muted ? "Unmute" : "Mute";
}

if (typeof module === "object" && module.exports) {
  module.exports = {
    whepEndpoint, backoffMs, retryAfterMs, retryDelayMs, RETRY_JITTER, RETRY_MAX_TRIES, BACKOFF_MAX_MS, CONNECT_TIMEOUT_MS, parseProblem, NO_H264, refusalPlan, CODEC_RETRY_MS, parseLinkHeader, iceServersFromLinks, orderCodecs,
    sdpHasAudio, SOUND_KEY, loadSoundPref, saveSoundPref, startPlayback, soundButtonLabel,
    frameWatch, STALL_MS, PROBE_EVERY_MS,
  };
}
