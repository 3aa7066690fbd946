package player

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// retryGrid has the page's own retry functions (whep.js) answer a grid of
// cases and prints the answers as JSON, for TestRetryPolicyMatchesPage.
const retryGrid = `
const h = require("./whep.js");
const out = { jitter: h.RETRY_JITTER, maxTries: h.RETRY_MAX_TRIES, backoffMax: h.BACKOFF_MAX_MS,
  connectTimeout: h.CONNECT_TIMEOUT_MS, backoff: [], delays: [], retryAfter: {} };
for (let f = 0; f <= 12; f++) out.backoff.push(h.backoffMs(f));
for (const after of [null, 1000, 2000, 10000, 600000]) {
  for (const tries of [1, 2, h.RETRY_MAX_TRIES - 1, h.RETRY_MAX_TRIES, h.RETRY_MAX_TRIES + 1]) {
    for (const failures of [0, 3, 20]) {
      for (const rand of [0, 0.123, 0.5, 0.999]) {
        out.delays.push({ after, tries, failures, rand, ms: h.retryDelayMs(after, tries, failures, rand) });
      }
    }
  }
}
// Seconds, as the server sends them; the page would read anything else
// as an HTTP date, which RetryAfter leaves alone.
for (const v of ["1", " 3 ", "0", "10", "999999", "99999999999999999999", "soon", ""]) {
  out.retryAfter[v] = h.retryAfterMs(v, 0);
}
console.log(JSON.stringify(out));
`

// TestRetryPolicyMatchesPage keeps retry.go equal to the page's policy:
// the same constants, and the same wait for every case of a grid.
func TestRetryPolicyMatchesPage(t *testing.T) {
	node := nodeBin(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"whep.js": helpersSrc, "grid.js": retryGrid} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, "grid.js")
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node grid.js: %v", err)
	}
	var page struct {
		Jitter         float64
		MaxTries       int
		BackoffMax     int64
		ConnectTimeout int64
		Backoff        []int64
		Delays         []struct {
			After    *int64
			Tries    int
			Failures int
			Rand     float64
			MS       *int64
		}
		RetryAfter map[string]*int64
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	if page.Jitter != RetryJitter || page.MaxTries != RetryMaxTries ||
		page.BackoffMax != BackoffMax.Milliseconds() || page.ConnectTimeout != ConnectTimeout.Milliseconds() {
		t.Fatalf("constants: page jitter %v, max tries %d, back-off max %d ms, connect timeout %d ms; Go %v, %d, %v, %v",
			page.Jitter, page.MaxTries, page.BackoffMax, page.ConnectTimeout, RetryJitter, RetryMaxTries, BackoffMax, ConnectTimeout)
	}
	for f, ms := range page.Backoff {
		if got := Backoff(f).Milliseconds(); got != ms {
			t.Errorf("Backoff(%d) = %d ms, page %d ms", f, got, ms)
		}
	}
	if len(page.Delays) == 0 {
		t.Fatal("the grid is empty")
	}
	for _, c := range page.Delays {
		var after time.Duration
		if c.After != nil {
			after = time.Duration(*c.After) * time.Millisecond
		}
		got, ok := RetryDelay(after, c.Tries, c.Failures, c.Rand)
		switch {
		case c.MS == nil && ok:
			t.Errorf("RetryDelay(%v, %d, %d, %v) = %v; the page stops asking", after, c.Tries, c.Failures, c.Rand, got)
		case c.MS != nil && (!ok || got != time.Duration(*c.MS)*time.Millisecond):
			t.Errorf("RetryDelay(%v, %d, %d, %v) = %v, %v; the page waits %d ms", after, c.Tries, c.Failures, c.Rand, got, ok, *c.MS)
		}
	}
	for v, ms := range page.RetryAfter {
		want := time.Duration(0)
		if ms != nil {
			want = time.Duration(*ms) * time.Millisecond
		}
		if got := RetryAfter(v); got != want {
			t.Errorf("RetryAfter(%q) = %v, page %v", v, got, want)
		}
	}
}
