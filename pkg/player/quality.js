// Quality menu of the srtwhep player (WHEP Core Extensions, layer
// selection): the server lists its renditions of the stream (the layers
// event, or a GET of the session's layer URL) and says which one this
// viewer gets; the viewer may pin one, or leave the choice to the
// server's bandwidth estimate ("Auto"). It shares one function scope with
// whep.js, liveness.js, events.js and player.js (inlined before
// player.js, whose state it uses only when called); a server without the
// Link leaves the menu hidden.

const LAYER_REL = "urn:ietf:params:whep:ext:core:layer";
const AUTO = "auto";
const SOURCE = "source";

// layerChoice is the viewer's choice for this page: it outlives sessions,
// so a reconnect pins the new session the same way.
let layerChoice = AUTO;

// layerLink finds the layer selection URL in a Link header, resolved
// against base; null without one.
function layerLink(value, base) {
  for (const l of parseLinkHeader(value || "")) {
    const rels = (l.params.rel || "").toLowerCase().split(/\s+/);
    if (!rels.includes(LAYER_REL)) continue;
    try { return new URL(l.url, base).href; } catch (e) { return null; }
  }
  return null;
}

// parseLayers reads a layers event's data (or the layer URL's GET): the
// video's mediaId → its layers, top first. null when it names none.
function parseLayers(data) {
  if (!data || typeof data !== "object") return null;
  for (const mediaId of Object.keys(data)) {
    const list = data[mediaId];
    if (!Array.isArray(list)) continue;
    const st = { mediaId, layers: [], active: null, pinned: null };
    for (const x of list) {
      if (!x || typeof x !== "object") continue;
      const id = typeof x.rid === "string" && x.rid ? x.rid : typeof x.encodingId === "string" ? x.encodingId : "";
      if (!id) continue;
      const num = (v) => (typeof v === "number" && isFinite(v) && v > 0 ? v : 0);
      st.layers.push({ id, width: num(x.width), height: num(x.height), bitrate: num(x.targetBitrate) });
      if (x.active === true) st.active = id;
      if (x.pinned === true) st.pinned = id;
    }
    if (st.layers.length) return st;
  }
  return null;
}

// layerName is what the menu calls a layer: the source by its height
// ("720p"), a rendition by its name.
function layerName(l) {
  if (l.id === SOURCE) return l.height ? l.height + "p" : "Source";
  return l.id;
}

// qualityLabel is the current rendition as the page shows it: "720p", or
// "360p · auto" while the server chooses among several.
function qualityLabel(st) {
  if (!st) return "";
  const l = st.layers.find((x) => x.id === st.active);
  if (!l) return "";
  return layerName(l) + (!st.pinned && st.layers.length > 1 ? " · auto" : "");
}

// selectionBody is the POST body for a choice: a layer's encodingId, or
// the video alone, which hands the choice back to the server.
function selectionBody(mediaId, choice) {
  const b = { mediaId };
  if (choice !== AUTO) b.encodingId = choice;
  return JSON.stringify(b);
}

// onLayers takes the session's layers; a page whose viewer chose a layer
// on an earlier session pins it on this one, once.
function onLayers(att, st) {
  if (cur !== att || !st) return;
  att.layers = st;
  drawQuality();
  if (layerChoice !== AUTO && st.pinned !== layerChoice && !att.pinTried &&
      st.layers.some((l) => l.id === layerChoice)) {
    att.pinTried = true;
    pinLayer(att, layerChoice);
  }
}

// fetchLayers reads the layers once the session exists: the event
// stream may be late, or missing.
async function fetchLayers(att) {
  if (!att.layerURL) return;
  try {
    const resp = await timedFetch(att.layerURL, { headers: headers({}) }, FETCH_TIMEOUT_MS);
    if (resp.ok) onLayers(att, parseLayers(await resp.json()));
  } catch (e) { /* the events may still say */ }
}

// pinLayer sends a choice; the answer is the session's layers after it.
async function pinLayer(att, choice) {
  if (!att.layerURL || !att.layers) return;
  let resp, body = "";
  try {
    resp = await timedFetch(att.layerURL, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: selectionBody(att.layers.mediaId, choice),
    }, FETCH_TIMEOUT_MS);
    body = await resp.text();
  } catch (e) {
    att.pinStatus = 0;
    return;
  }
  att.pinStatus = resp.status;
  if (resp.ok) {
    att.pinError = "";
    try { onLayers(att, parseLayers(JSON.parse(body))); } catch (e) { /* the events say */ }
    return;
  }
  att.pinError = parseProblem(resp.headers.get("Content-Type"), body).text;
  console.warn("srtwhep: layer selection refused:", att.pinError);
  drawQuality();
}

// drawQuality shows the menu (Auto, then each layer) and the current
// rendition; hidden while the session has no layers.
function drawQuality() {
  const sel = document.getElementById("quality");
  const label = document.getElementById("layer");
  // A copy of the page hosted elsewhere may lack them.
  if (!sel || !label) return;
  const st = cur && cur.layers;
  sel.hidden = label.hidden = !st;
  if (!st) return;
  const want = [AUTO].concat(st.layers.map((l) => l.id));
  const have = Array.from(sel.options).map((o) => o.value);
  if (want.join("\n") !== have.join("\n")) {
    sel.textContent = "";
    sel.add(new Option("Auto", AUTO));
    for (const l of st.layers) sel.add(new Option(layerName(l), l.id));
  }
  sel.value = want.includes(layerChoice) ? layerChoice : AUTO;
  label.textContent = qualityLabel(st);
}

function layerStats() {
  const st = cur && cur.layers;
  return {
    layer: st ? st.active : null, layers: st ? st.layers.map((l) => l.id) : [],
    layerPinned: st ? st.pinned : null, layerLabel: qualityLabel(st), layerChoice,
    layerPinStatus: cur && cur.pinStatus !== undefined ? cur.pinStatus : null,
  };
}

if (typeof document === "object" && document.getElementById("quality")) {
  document.getElementById("quality").addEventListener("change", (ev) => {
    layerChoice = ev.target.value;
    if (cur && cur.layers) {
      cur.pinTried = true;
      pinLayer(cur, layerChoice);
    }
  });
}

if (typeof module === "object" && module.exports) {
  module.exports = { layerLink, parseLayers, layerName, qualityLabel, selectionBody, LAYER_REL };
}
