package player

import "testing"

// eventChecks drive events.js's DOM-free helpers under Node: the Link the
// server sends, event data with unknown or broken fields, the status text
// and where a reconnect sends the page.
const eventChecks = `
const assert = require("node:assert/strict");
const e = require("./bundle.js");

const link = '<stun:stun.example.org>; rel="ice-server", ' +
  '</live/cam1/whep/abc/sse>; rel="urn:ietf:params:whep:ext:core:server-sent-events"; events="active,inactive,reconnect,viewercount"';
assert.equal(e.sseLink(link, "http://a.example:8889/live/cam1/whep"), "http://a.example:8889/live/cam1/whep/abc/sse");
assert.equal(e.sseLink('<stun:s>; rel="ice-server"', "http://a.example/"), null, "no SSE Link: the page keeps its inference");
assert.equal(e.sseLink(null, "http://a.example/"), null);

assert.deepEqual(e.eventData('{"viewercount":3,"future":{"x":1}}'), { viewercount: 3, future: { x: 1 } });
assert.deepEqual(e.eventData("not json"), {});
assert.deepEqual(e.eventData("[1,2]"), {});

assert.equal(e.liveText(3), "Live · 3 watching");
assert.equal(e.liveText(null), "Playing", "before a count arrives");
assert.equal(e.liveText(NaN), "Playing");

const ep = "https://edge1.example.com/live/cam1/whep";
assert.equal(e.reconnectTarget({ url: "https://lb.example.com/live/cam1/whep" }, ep), "https://lb.example.com/live/cam1/whep");
assert.equal(e.reconnectTarget({}, ep), ep, "no url: the endpoint the session came from");
assert.equal(e.reconnectTarget({ url: "javascript:alert(1)" }, ep), ep, "only http(s)");
assert.equal(e.reconnectTarget({ url: "/other/whep" }, ep), "https://edge1.example.com/other/whep");
console.log("ok");
`

func TestEventHelpers(t *testing.T) {
	runNode(t, map[string]string{"bundle.js": helpersSrc + "\n" + eventsSrc, "check.js": eventChecks}, "check.js")
}
