package bwe

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"time"
)

// recordedTrace reads a trace cmd/srtwhep's TestEstimateShaped recorded
// (SRTWHEP_RECORD_TRACE): a 2.5 Mbit/s 720p stream from the real server
// to a pion viewer behind tc's tbf at 1 Mbit/s (burst 32 kB, latency
// 200 ms) on a namespace's loopback, each packet as the server sent it
// and as the viewer's socket read it. The viewer's feedback is rebuilt
// from the arrivals with pion's generator, every 100 ms as pion's sends
// it, and reaches the sender 1 ms later, as on loopback.
func recordedTrace(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []event
	var arrivals []arrival
	var end time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind string
		var us int64
		var seq uint16
		var size int
		if _, err := fmt.Sscan(sc.Text(), &kind, &us, &seq); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		at := time.Duration(us) * time.Microsecond
		end = max(end, at)
		switch kind {
		case "s":
			if _, err := fmt.Sscanf(sc.Text(), "s %d %d %d", &us, &seq, &size); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			evs = append(evs, event{at: at, seq: seq, size: size})
		case "r":
			arrivals = append(arrivals, arrival{seq, at})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return withFeedback(evs, arrivals, end, time.Millisecond)
}

// TestRecordedTrace: on feedback recorded behind a real 1 Mbit/s link,
// the estimate falls below 1.2 Mbit/s within 3 s of the first packet and
// stays near the link's rate; pion's GCC falls at the same moment, within
// a second.
func TestRecordedTrace(t *testing.T) {
	evs := recordedTrace(t, "testdata/tbf-1mbit.trace")
	first := evs[0].at
	ours := replay(evs, 2*time.Millisecond)
	theirs := replayPion(t, evs, 2_500_000)
	for sec := first + 500*time.Millisecond; sec <= evs[len(evs)-1].at; sec += 500 * time.Millisecond {
		t.Logf("%5v ours %8d  pion %8d", sec-first, at(ours, sec).Bitrate, at(theirs, sec).Bitrate)
	}
	o, p := firstBelow(ours, first, 1.2*mbit), firstBelow(theirs, first, 1.2*mbit)
	t.Logf("below 1.2 Mbit/s: ours %v, pion %v after the first packet", o-first, p-first)
	if o < 0 || o-first > 3*time.Second {
		t.Fatalf("ours fell below 1.2 Mbit/s at %v, want within 3 s of the first packet", o-first)
	}
	for _, s := range ours {
		if s.at > o && (s.est.Bitrate < 0.3*mbit || s.est.Bitrate > 1.3*mbit) {
			t.Errorf("ours at %v: %d, want within [0.3, 1.3] Mbit/s behind the 1 Mbit/s link", s.at-first, s.est.Bitrate)
		}
	}
	if p < 0 || o-p > time.Second || p-o > time.Second {
		t.Errorf("pion fell below 1.2 Mbit/s at %v, ours at %v; want within a second of each other", p-first, o-first)
	}
}
