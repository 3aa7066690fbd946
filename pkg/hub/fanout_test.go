package hub

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestSlowReaderDropsWholeGOPTails(t *testing.T) {
	h := New(Config{QueueSize: 8, GOPCacheFrames: 4})
	pub := mustPublish(t, h, "live/a")
	fast := mustReader(t, h, "live/a", "fast")
	slow := mustReader(t, h, "live/a", "slow")
	fast.Attach()
	slow.Attach()

	const gop = 10
	seq := 0
	var slowGot []got
	// The fast reader consumes every frame as it is written; the slow one
	// only catches up between bursts longer than its queue.
	for round := range 20 {
		for range 13 + round%7 {
			au := mkAU(seq, seq%gop == 0)
			seq++
			pub.Write(au)
			g, catchUp, err := recvVideo(t.Context(), fast)
			if err != nil {
				t.Fatalf("fast Recv: %v", err)
			}
			if g != au || catchUp {
				t.Fatalf("fast reader got PTS %d (catchUp=%v), want %d live", g.PTS, catchUp, au.PTS)
			}
		}
		slowGot = append(slowGot, drain(t, slow)...)
	}

	if n := fast.Dropped(); n != 0 {
		t.Errorf("fast reader dropped %d frames, want 0", n)
	}
	if err := checkSequence(slowGot); err != nil {
		t.Fatalf("slow reader: %v\n%v", err, slowGot)
	}
	if gaps(slowGot) == 0 || slow.Dropped() == 0 {
		t.Fatalf("slow reader never dropped (gaps %d, Dropped %d); the test lost its point",
			gaps(slowGot), slow.Dropped())
	}
	// Each GOP arrives as a prefix starting at its IDR.
	for i, g := range slowGot {
		if g.seq%gop != 0 && (i == 0 || slowGot[i-1].seq != g.seq-1) {
			t.Fatalf("frame %d of GOP %d arrived without its predecessors", g.seq%gop, g.seq/gop)
		}
	}
	if want := uint64(seq - len(slowGot)); slow.Dropped() != want {
		t.Errorf("slow Dropped() = %d, want %d (written %d, delivered %d)", slow.Dropped(), want, seq, len(slowGot))
	}
	ps := h.Paths()
	if len(ps) != 1 || ps[0].FramesDropped != slow.Dropped() || ps[0].FramesIn != uint64(seq) {
		t.Errorf("Paths() = %+v, want FramesDropped %d FramesIn %d", ps, slow.Dropped(), seq)
	}
}

func TestPublisherNeverBlocksOnStalledReader(t *testing.T) {
	h := New(Config{QueueSize: 4})
	pub := mustPublish(t, h, "live/a")
	stalled := mustReader(t, h, "live/a", "stalled")
	stalled.Attach()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10000 {
			pub.Write(mkAU(i, i%30 == 0))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Write blocked on a reader that never reads")
	}
	seqs := drain(t, stalled)
	if len(seqs) != 4 || seqs[0].seq != 0 || seqs[3].seq != 3 {
		t.Errorf("stalled reader holds %v, want frames 0..3", seqs)
	}
	if got := stalled.Dropped(); got != 10000-4 {
		t.Errorf("Dropped() = %d, want %d", got, 10000-4)
	}
}

var dropLine = regexp.MustCompile(`(?m)^level=WARN msg="reader is too slow, discarding (\d+) frames" path=(\S+) session=(\S+)$`)

// loggedDrops sums the counts of every drop line per session.
func loggedDrops(t *testing.T, text string) map[string]int {
	t.Helper()
	sum := map[string]int{}
	lines := 0
	for _, m := range dropLine.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		if m[2] != "live/a" {
			t.Errorf("drop line with path %q, want live/a", m[2])
		}
		sum[m[3]] += n
		lines++
	}
	if total := regexp.MustCompile(`(?m)^.+$`).FindAllString(text, -1); len(total) != lines {
		t.Errorf("unexpected log lines:\n%s", text)
	}
	return sum
}

func TestDropSummaryLog(t *testing.T) {
	capture := &testkit.LogBuffer{}
	h := New(Config{QueueSize: 4, Logger: capture.Logger(slog.LevelInfo)})
	ctx, cancel := context.WithCancel(t.Context())
	runDone := make(chan error)
	go func() { runDone <- h.Run(ctx) }()

	pub := mustPublish(t, h, "live/a")
	slow := mustReader(t, h, "live/a", "s1")
	quiet := mustReader(t, h, "live/a", "s2")
	gone, err := h.AddReader("live/a", "s3")
	if err != nil {
		t.Fatal(err)
	}
	slow.Attach()
	quiet.Attach()
	gone.Attach()

	pub.Write(mkAU(0, true))
	for i := 1; i < 4; i++ {
		pub.Write(mkAU(i, false))
	}
	drain(t, quiet)
	// s1 and s3 are full: one failed push, then 19 frames gated to the IDR.
	for i := 4; i < 24; i++ {
		pub.Write(mkAU(i, false))
		drain(t, quiet)
	}
	// A reader that leaves still gets its drops reported.
	gone.Close()

	want := map[string]int{"s1": 20, "s3": 20}
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("drop summaries %v", want), func() bool {
		sums := loggedDrops(t, capture.String())
		return sums["s1"] == want["s1"] && sums["s3"] == want["s3"]
	})
	cancel()
	if err := <-runDone; err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	sums := loggedDrops(t, capture.String())
	if len(sums) != 2 || sums["s2"] != 0 {
		t.Errorf("logged drops %v, want exactly %v", sums, want)
	}
}

func TestAttachMidGOPStartsFromCachedIDR(t *testing.T) {
	h := New(Config{QueueSize: 64})
	pub := mustPublish(t, h, "live/a")
	pub.Write(mkAU(0, false)) // before any IDR: not cacheable
	for i := 1; i <= 5; i++ {
		pub.Write(mkAU(i, i == 1))
	}
	r := mustReader(t, h, "live/a", "late")
	// Reserved but not attached: receives nothing.
	pub.Write(mkAU(6, false))
	if seqs := drain(t, r); len(seqs) != 0 {
		t.Fatalf("unattached reader received %v", seqs)
	}
	r.Attach()
	r.Attach() // no effect
	for i := 7; i <= 12; i++ {
		pub.Write(mkAU(i, i == 10))
	}
	var want []got
	for i := 1; i <= 6; i++ {
		want = append(want, got{i, i == 1, true})
	}
	for i := 7; i <= 12; i++ {
		want = append(want, got{i, i == 10, false})
	}
	if seqs := drain(t, r); fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", seqs, want)
	}
}

func TestAttachWithoutUsableCacheWaitsForIDR(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		pre  int // frames written before Attach, the first one an IDR
	}{
		{"GOP longer than cache", Config{QueueSize: 16, GOPCacheFrames: 3}, 5},
		{"no IDR yet", Config{QueueSize: 16}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := New(tc.cfg)
			pub := mustPublish(t, h, "live/a")
			for i := range tc.pre {
				pub.Write(mkAU(i, i == 0))
			}
			r := mustReader(t, h, "live/a", "s")
			r.Attach()
			pub.Write(mkAU(tc.pre, false))
			pub.Write(mkAU(tc.pre+1, true))
			pub.Write(mkAU(tc.pre+2, false))
			want := []got{{tc.pre + 1, true, false}, {tc.pre + 2, false, false}}
			if seqs := drain(t, r); fmt.Sprint(seqs) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v", seqs, want)
			}
			if r.Dropped() != 0 {
				t.Errorf("waiting for the first IDR counted %d drops, want 0", r.Dropped())
			}
		})
	}
}
