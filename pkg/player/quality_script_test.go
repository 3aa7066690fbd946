package player

import "testing"

// qualityChecks drive quality.js's DOM-free helpers under Node: the
// layer Link, layers data as the server sends it (and as it must not
// break on), the label the page shows and the POST body of a choice.
const qualityChecks = `
const assert = require("node:assert/strict");
const q = require("./bundle.js");

const link = '</live/cam1/whep/abc/sse>; rel="urn:ietf:params:whep:ext:core:server-sent-events"; events="active,layers", ' +
  '</live/cam1/whep/abc/layer>; rel="urn:ietf:params:whep:ext:core:layer"';
assert.equal(q.layerLink(link, "http://a.example:8889/live/cam1/whep"), "http://a.example:8889/live/cam1/whep/abc/layer");
assert.equal(q.layerLink('<stun:s>; rel="ice-server"', "http://a.example/"), null, "no layer Link: no menu");
assert.equal(q.layerLink(null, "http://a.example/"), null);

// What pkg/wheplayer sends: one video, top first.
const two = q.parseLayers({ "0": [
  { rid: "source", encodingId: "source", width: 1280, height: 720, targetBitrate: 2500000, active: false },
  { rid: "360p", encodingId: "360p", width: 640, height: 360, targetBitrate: 700000, active: true },
] });
assert.deepEqual(two, { mediaId: "0", active: "360p", pinned: null, layers: [
  { id: "source", width: 1280, height: 720, bitrate: 2500000 }, { id: "360p", width: 640, height: 360, bitrate: 700000 }] });
assert.equal(q.qualityLabel(two), "360p · auto", "the server chooses among two");
assert.equal(q.qualityLabel(Object.assign({}, two, { pinned: "360p" })), "360p", "pinned");
const one = q.parseLayers({ "1": [{ rid: "source", width: 1280, height: 720, active: true }] });
assert.equal(one.mediaId, "1");
assert.equal(q.qualityLabel(one), "720p", "one layer: nothing to choose, no auto");
assert.equal(q.qualityLabel(q.parseLayers({ "0": [{ rid: "source", active: true }] })), "Source", "size not yet known");
// Only encodingId (earlier texts), junk entries, nothing usable.
assert.equal(q.parseLayers({ "0": [{ encodingId: "hd", active: true }, null, 3, { width: 1 }] }).active, "hd");
assert.equal(q.parseLayers({ "0": [] }), null);
assert.equal(q.parseLayers({ "0": "x" }), null);
assert.equal(q.parseLayers(null), null);
assert.equal(q.qualityLabel(null), "");

assert.equal(q.selectionBody("0", "360p"), '{"mediaId":"0","encodingId":"360p"}');
assert.equal(q.selectionBody("0", "auto"), '{"mediaId":"0"}', "auto: the video without constraints, as the text has it");
console.log("ok");
`

func TestQualityHelpers(t *testing.T) {
	runNode(t, map[string]string{"bundle.js": helpersSrc + "\n" + qualitySrc, "check.js": qualityChecks}, "check.js")
}
