// WHEP helpers of the srtwhep player that touch no DOM. In the page they
// share one function scope with player.js; under Node (the tests) this file
// exports them instead.

const BACKOFF_MAX_MS = 10000;
const GATHER_CAP_MS = 1000; // send the offer with whatever candidates exist by then
const DISCONNECT_GRACE_MS = 3000; // "disconnected" often heals by itself
const CONNECT_TIMEOUT_MS = 15000;
const FETCH_TIMEOUT_MS = 10000;
const OPTIONS_TIMEOUT_MS = 3000;

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

if (typeof module === "object" && module.exports) {
  module.exports = { whepEndpoint, backoffMs, retryAfterMs, parseLinkHeader, iceServersFromLinks, orderCodecs };
}
