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

assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 1000].map(h.backoffMs), [1000, 2000, 4000, 8000, 10000, 10000, 10000, 10000]);

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
