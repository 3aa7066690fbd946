package hub

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
)

// tickAU is mkAU at 30 fps on the 90 kHz clock with size bytes of data;
// PTS/3000 is its sequence number.
func tickAU(seq int, idr bool, size int) *av.AccessUnit {
	return &av.AccessUnit{PTS: int64(seq) * 3000, IDR: idr, Size: size, NALUs: [][]byte{make([]byte, size)}}
}

func seqs(t *testing.T, r *Reader) []got {
	out := drain(t, r)
	for i := range out {
		out[i].seq /= 3000
	}
	return out
}

// TestGOPCacheHoldsOBSGOP: OBS Simple mode's 250-frame (8.3 s) GOP fits
// the default limits, so a viewer joining at its end starts at once from
// the IDR, though the queue holds only 16 frames, and live frames follow.
func TestGOPCacheHoldsOBSGOP(t *testing.T) {
	h := New(Config{QueueSize: 16})
	pub := mustPublish(t, h, "live/obs")
	for i := range 250 {
		pub.Write(tickAU(i, i == 0, 2000))
	}
	r := mustReader(t, h, "live/obs", "late")
	r.Attach()
	for i := 250; i < 266; i++ { // a whole QueueSize of live frames
		pub.Write(tickAU(i, false, 2000))
	}
	out := seqs(t, r)
	if err := checkSequence(out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 266 || !out[0].idr || !out[249].catchUp || out[250].catchUp {
		t.Fatalf("got %d frames (first %v), want the 250 cached from the IDR then 16 live", len(out), out[:min(len(out), 2)])
	}
	if r.Dropped() != 0 {
		t.Errorf("%d frames dropped behind the replay", r.Dropped())
	}
}

// TestGOPCacheBounds pushes GOPs past each limit: the cache stops at the
// bound (a late viewer waits for the next IDR), the warning names the
// setting once per publisher, and a GOP within the limits is cached again.
func TestGOPCacheBounds(t *testing.T) {
	cases := []struct {
		name    string
		limits  GOPCacheLimits
		size    int // bytes per picture
		frames  int // pictures in the long GOP
		setting string
	}{
		{"time", GOPCacheLimits{Duration: time.Second, Bytes: 32 << 20}, 1000, 40, "gopCacheDuration"},
		{"bytes", GOPCacheLimits{Duration: 10 * time.Second, Bytes: 64 << 10}, 10 << 10, 12, "gopCacheBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testkit.LogBuffer{}
			h := New(Config{QueueSize: 16, Logger: logs.Logger(slog.LevelInfo),
				GOPCache: func(string) GOPCacheLimits { return tc.limits }})
			pub := mustPublish(t, h, "live/a")
			seq := 0
			for range 3 { // three long GOPs: one warning
				for i := range tc.frames {
					pub.Write(tickAU(seq, i == 0, tc.size))
					seq++
				}
				if b := cachedBytes(h, "live/a"); b > tc.limits.Bytes {
					t.Fatalf("cache holds %d bytes, over the %d limit", b, tc.limits.Bytes)
				}
			}
			r := mustReader(t, h, "live/a", "late")
			r.Attach()
			pub.Write(tickAU(seq, false, tc.size))
			pub.Write(tickAU(seq+1, true, tc.size))
			want := []got{{seq + 1, true, false}}
			if out := seqs(t, r); fmt.Sprint(out) != fmt.Sprint(want) {
				t.Fatalf("late viewer got %v, want to wait for the next IDR %v", out, want)
			}
			if n := len(logs.Lines("GOP outgrew the cache", "setting="+tc.setting)); n != 1 {
				t.Errorf("%d warnings naming %s, want 1:\n%s", n, tc.setting, logs.String())
			}
			// A short GOP is cached again.
			pub.Write(tickAU(seq+2, false, tc.size))
			r2 := mustReader(t, h, "live/a", "next")
			r2.Attach()
			if out := seqs(t, r2); len(out) != 2 || !out[0].idr || !out[0].catchUp {
				t.Fatalf("viewer of a short GOP got %v, want the IDR and its P frame from the cache", out)
			}
		})
	}
}

// TestGOPCacheOff: zero limits cache nothing.
func TestGOPCacheOff(t *testing.T) {
	h := New(Config{QueueSize: 16, GOPCache: func(string) GOPCacheLimits { return GOPCacheLimits{} }})
	pub := mustPublish(t, h, "live/a")
	pub.Write(tickAU(0, true, 100))
	pub.Write(tickAU(1, false, 100))
	r := mustReader(t, h, "live/a", "s")
	r.Attach()
	if out := seqs(t, r); len(out) != 0 {
		t.Fatalf("got %v from a cache that is off", out)
	}
}

func cachedBytes(h *Hub, name string) int {
	h.mu.RLock()
	p := h.paths[name]
	h.mu.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cacheBytes
}
