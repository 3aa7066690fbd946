package main

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// window is what a viewer played between two of its stats: pictures
// decoded and broken, sequence numbers missing, packets that came late
// (a NACK's retransmission among them), and the longest wait between two
// decoded pictures.
type window struct {
	decoded, broken, gaps, late uint64
	fps                         float64
	freeze                      time.Duration
}

func playedSince(v *viewer, from whepclient.Stats, start time.Time) window {
	st := v.Stats()
	w := window{decoded: st.DecodedAUs - from.DecodedAUs, broken: st.BrokenAUs - from.BrokenAUs, gaps: st.SeqGaps - from.SeqGaps,
		late: st.Reordered - from.Reordered}
	w.fps = float64(w.decoded) / time.Since(start).Seconds()
	prev := start
	for _, au := range v.units() {
		if au.Received.Before(start) {
			continue
		}
		w.freeze = max(w.freeze, au.Received.Sub(prev))
		prev = au.Received
	}
	w.freeze = max(w.freeze, time.Since(prev))
	return w
}

// TestRenditionProbe: a 720p30 2.5 Mbit/s stream with the default
// ladder, whose 360p rendition does not run while nobody needs it. A
// viewer behind 1 Mbit/s (tc tbf in a network namespace, as
// TestEstimateShaped, with a 16 kB bucket: a cluster smaller than the
// bucket would pass it at its send rate) is moved down to the 360p
// rendition, which starts for it, and stays there, playing it whole: the
// clusters its sender sends to ask whether the link carries the source
// arrive at about the link's rate, so no move up is tried. Then the link
// widens to 4 Mbit/s: the next cluster arrives at its rate and the
// viewer moves back up to the source. (A viewer on an open link is left
// on the source: TestBrowserShapedLink's unshaped half.)
//
// Not parallel: the link's rate is what it measures. One viewer only: a
// second one in this process, decoding 720p, delays the narrow viewer's
// transport-cc feedback enough that its estimate is cut now and then, and
// a viewer is probed only after 12 s without a cut.
func TestRenditionProbe(t *testing.T) {
	requireNetns(t, "tc")
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	feedback := func(o *whepclient.Options) { o.TransportCC, o.NACK, o.ReceiverReports = true, true, true }
	testkit.WaitFor(t, 10*time.Second, "the path's ladder", func() bool { return len(renditionsOf(t, ts, "live/cam1")) > 0 })
	rs := renditionsOf(t, ts, "live/cam1")
	if len(rs) != 1 || rs[0].Name != "360p" || rs[0].Width != 640 || rs[0].Running || rs[0].Viewers != 0 {
		t.Fatalf("renditions with nobody on them: %+v; want 360p, not running", rs)
	}

	narrow, setRate := dialBehindTBF(t, ts, "live/cam1", "16kb", "500ms", feedback)
	id := "session=" + sessionID(narrow)
	start := time.Now()
	line := ts.logs.WaitLog(t, 20*time.Second, "viewer switched rendition", "direction=down", id)
	t.Logf("%.1f s after the narrow viewer connected: %s", time.Since(start).Seconds(), line)
	testkit.WaitFor(t, 5*time.Second, "the narrow viewer's first 360p picture", func() bool { return pictureHeight(t, narrow) == 360 })
	// Once the link has drained what it queued of the source (a couple of
	// seconds), the rendition plays whole.
	settled := narrow.Stats().DecodedAUs + 60
	testkit.WaitFor(t, 5*time.Second, "the link to settle", func() bool { return narrow.Stats().DecodedAUs >= settled })
	rs = renditionsOf(t, ts, "live/cam1")
	if len(rs) != 1 || !rs[0].Running || rs[0].Viewers != 1 {
		t.Fatalf("renditions with the narrow viewer on 360p: %+v; want it running with one viewer", rs)
	}
	t.Logf("rendition as /v1/paths shows it: %+v", rs[0])

	// 20 s behind 1 Mbit/s, probed: the first cluster goes out once the
	// estimate has gone 12 s without a cut (abr.ProbeAfter), which the
	// move down and the drain of the source's queue were, so it may come
	// at the end of the window or after it.
	from, start := narrow.Stats(), time.Now()
	time.Sleep(20 * time.Second) // the span measured
	w := playedSince(narrow, from, start)
	testkit.WaitFor(t, 30*time.Second, "a probe cluster on the rendition", func() bool {
		return len(ts.logs.Lines("viewer's link probed", id)) > 0
	})
	time.Sleep(2 * time.Second) // a move up follows its cluster's result within milliseconds
	probes := ts.logs.Lines("viewer's link probed", id)
	for _, l := range probes {
		t.Logf("1 Mbit/s: %s", l)
	}
	t.Logf("1 Mbit/s, 20 s on 360p: %.1f fps, %d broken, %d sequence numbers missing, longest wait for a picture %v",
		w.fps, w.broken, w.gaps, w.freeze.Round(time.Millisecond))
	if ups := ts.logs.Lines("viewer switched rendition", "direction=up", id); len(ups) > 0 {
		t.Errorf("moved up through 1 Mbit/s: %q", ups)
	}
	if w.broken > 0 || w.gaps > 0 || w.fps < 25 || w.freeze > time.Second {
		t.Errorf("the rendition beside the clusters: %+v; want every picture whole, ≥ 25 fps, no wait over 1 s", w)
		for _, l := range ts.logs.Lines(id) {
			t.Log("server: " + l) // what the sender said of this viewer: resends refused, skips, probes
		}
	}

	// The link widens.
	setRate("4mbit")
	widened := time.Now()
	line = ts.logs.WaitLog(t, 20*time.Second, "viewer switched rendition", "direction=up", id)
	up := time.Since(widened)
	for _, l := range ts.logs.Lines("viewer's link probed", id)[len(probes):] {
		t.Logf("4 Mbit/s: %s", l)
	}
	t.Logf("moved up %.1f s after the link widened: %s", up.Seconds(), line)
	testkit.WaitFor(t, 5*time.Second, "the source's first picture", func() bool { return pictureHeight(t, narrow) == 720 })
	from, start = narrow.Stats(), time.Now()
	time.Sleep(5 * time.Second) // the span measured
	w = playedSince(narrow, from, start)
	t.Logf("4 Mbit/s, 5 s on the source: %.1f fps, %d broken, %d sequence numbers missing, %d packets late, longest wait for a picture %v",
		w.fps, w.broken, w.gaps, w.late, w.freeze.Round(time.Millisecond))
	if up > 12*time.Second {
		t.Errorf("moved up %v after the link widened; want within 10 s and the source's next IDR", up)
	}
	// The source's IDRs are bursts a 4 Mbit/s bucket may lose a packet
	// of; the viewer's NACK brings it back. whepclient has no jitter
	// buffer, so the picture counts as broken when the resend arrives
	// late, where a browser's would wait for it: a broken picture counts
	// only beyond the packets that came late.
	if w.broken > w.late || w.fps < 25 || w.freeze > time.Second {
		t.Errorf("the source after the move up: %+v", w)
	}
}
