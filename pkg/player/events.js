// Server-sent events of the srtwhep player (WHEP Core Extensions): when the
// 201 names an event stream, the server tells the page whether the stream
// is live, how many watch and when to move to another server, instead of
// the page inferring it from stalled frames. It shares one function scope
// with whep.js, liveness.js and player.js (inlined before player.js, whose
// state it uses only when called); a server without the Link leaves the
// page on its inference.

const SSE_REL = "urn:ietf:params:whep:ext:core:server-sent-events";
const SSE_EVENTS = ["active", "inactive", "reconnect", "viewercount", "layers"];
// SWAP_MAX_MS: a new session on reconnect that shows no frame within this
// takes over anyway; the old one is about to be ended by its server.
const SWAP_MAX_MS = 4000;

// sseLink finds the event stream entry point in a Link header, resolved
// against base; null without one.
function sseLink(value, base) {
  for (const l of parseLinkHeader(value || "")) {
    const rels = (l.params.rel || "").toLowerCase().split(/\s+/);
    if (!rels.includes(SSE_REL)) continue;
    try { return new URL(l.url, base).href; } catch (e) { return null; }
  }
  return null;
}

// eventData parses an event's data line; unknown fields are ignored and
// unreadable data reads as {}.
function eventData(text) {
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch (e) {
    return {};
  }
}

// liveText is the status while the stream plays: the viewer count once the
// server has sent one.
function liveText(viewers) {
  return typeof viewers === "number" && isFinite(viewers) && viewers >= 0
    ? "Live · " + Math.round(viewers) + " watching" : "Playing";
}

// reconnectTarget is where a reconnect event sends the page: its url,
// resolved against the session's endpoint, or that endpoint itself.
function reconnectTarget(data, endpointURL) {
  if (data && typeof data.url === "string" && data.url) {
    try {
      const u = new URL(data.url, endpointURL);
      if (u.protocol === "http:" || u.protocol === "https:") return u.href;
    } catch (e) { /* fall back to the endpoint */ }
  }
  return endpointURL;
}

// openEvents subscribes the attempt to its session's event stream. Any
// failure leaves the page on its own inference.
async function openEvents(att) {
  if (!att.sseEntry || typeof EventSource !== "function") return;
  let resp;
  try {
    resp = await timedFetch(att.sseEntry, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(SSE_EVENTS),
    }, FETCH_TIMEOUT_MS);
  } catch (e) {
    return;
  }
  const loc = resp.status === 201 && resp.headers.get("Location");
  if (!loc) return;
  const url = new URL(loc, att.sseEntry).href;
  if (cur !== att) {
    deleteSession(url);
    return;
  }
  const es = new EventSource(url);
  att.events = es;
  att.eventsURL = url;
  es.addEventListener("active", () => {
    if (cur !== att) return;
    att.live = true;
    if (state === "stalled" || state === "waiting") setStatus("connecting", "Stream is back — starting…");
  });
  es.addEventListener("inactive", () => {
    if (cur !== att) return;
    att.live = false;
    setStatus("stalled", INTERRUPTED);
  });
  es.addEventListener("viewercount", (ev) => {
    if (cur !== att) return;
    const n = eventData(ev.data).viewercount;
    if (typeof n === "number") att.viewers = n;
    if (state === "playing") setStatus("playing", liveText(att.viewers));
  });
  es.addEventListener("layers", (ev) => onLayers(att, parseLayers(eventData(ev.data))));
  es.addEventListener("reconnect", (ev) => moveTo(att, reconnectTarget(eventData(ev.data), att.endpoint)));
}

// closeEvents ends the attempt's event stream; the session's DELETE ends
// it on the server as well.
function closeEvents(att) {
  if (att.events) {
    att.events.close();
    att.events = null;
  }
  if (att.eventsURL) {
    deleteSession(att.eventsURL);
    att.eventsURL = null;
  }
}

// moveTo is make-before-break: a new session at target while the old one
// keeps playing, which the new one's first frame replaces (swap).
function moveTo(att, target) {
  if (cur !== att || att.moving) return;
  att.moving = true;
  endpointNow = target;
  connect(att);
}

// warmThenSwap plays the new attempt's stream in a hidden element until
// its first frame, then hands it to the page's video element and ends the
// old session: the picture never goes black.
function warmThenSwap(att) {
  if (att.warm) return;
  const w = document.createElement("video");
  w.muted = true;
  w.playsInline = true;
  // Rendered (a frame callback needs that) but invisible.
  w.style.cssText = "position:fixed;left:0;top:0;width:2px;height:2px;opacity:0;pointer-events:none";
  document.body.appendChild(w);
  w.srcObject = att.stream;
  att.warm = w;
  const swap = () => {
    if (cur !== att || !att.keep) return;
    const old = att.keep;
    att.keep = null;
    unwarm(att);
    video.srcObject = att.stream;
    play();
    release(old);
    // A new source cancels the element's pending frame callbacks, which
    // the stall watch runs on: start it again on the new stream.
    if (att.watch) {
      clearInterval(att.watchTimer);
      att.watch = null;
      watchFrames(att);
    }
  };
  if (typeof w.requestVideoFrameCallback === "function") w.requestVideoFrameCallback(swap);
  else w.addEventListener("playing", swap, { once: true });
  w.play().catch(() => {});
  att.timers.push(setTimeout(swap, SWAP_MAX_MS));
}

function unwarm(att) {
  if (!att.warm) return;
  att.warm.srcObject = null;
  att.warm.remove();
  att.warm = null;
}

// abandonMove gives the page back to the old session when the new one
// failed, and tries the move again after a back-off while the old one
// lives; false when att was not a move.
function abandonMove(att) {
  const old = att.keep;
  if (!old || cur !== att) return false;
  att.keep = null;
  release(att);
  cur = old;
  old.moving = false;
  const target = endpointNow;
  old.timers.push(setTimeout(() => moveTo(old, target), nextBackoff()));
  return true;
}

if (typeof module === "object" && module.exports) {
  module.exports = { sseLink, eventData, liveText, reconnectTarget, SSE_REL, SSE_EVENTS };
}
