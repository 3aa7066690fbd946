package main

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/whep"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

const frameTicks = 90000 / 30

func naluTypes(au whepclient.AccessUnit) map[h264.NALUType]bool {
	m := map[h264.NALUType]bool{}
	for _, n := range au.NALUs {
		if len(n) > 0 {
			m[h264.NALUType(n[0]&0x1f)] = true
		}
	}
	return m
}

// checkStartsWithIDR asserts the viewer's first picture is decodable on its
// own: an IDR carrying SPS and PPS.
func checkStartsWithIDR(t *testing.T, name string, aus []whepclient.AccessUnit) {
	t.Helper()
	if len(aus) == 0 {
		t.Fatalf("%s: no access units", name)
	}
	types := naluTypes(aus[0])
	if !aus[0].IDR || !types[h264.NALUTypeIDR] || !types[h264.NALUTypeSPS] || !types[h264.NALUTypePPS] {
		t.Errorf("%s: first access unit is not IDR+SPS+PPS: NAL types %v", name, types)
	}
}

// liveUnits is aus without the catch-up burst a viewer starts with: the
// cached GOP and what queued while it went out are stamped
// catchUpInterval apart (8 ms, well under a frame) until the sender
// reaches the live edge, and are sent ahead of real time on purpose. How
// long the burst lasts depends on the machine's load, so a frame rate
// is judged on the pictures after it.
func liveUnits(aus []whepclient.AccessUnit) []whepclient.AccessUnit {
	start := 0
	for i := 1; i < len(aus); i++ {
		if aus[i].RTPTimestamp-aus[i-1].RTPTimestamp < frameTicks/2 {
			start = i + 1
		}
	}
	return aus[min(start, len(aus)):]
}

// liveFrameRate measures frames per second from RTP timestamps over the
// live pictures (liveUnits); 0 when there are fewer than two.
func liveFrameRate(aus []whepclient.AccessUnit) float64 {
	live := liveUnits(aus)
	if len(live) < 2 {
		return 0
	}
	span := float64(live[len(live)-1].RTPTimestamp - live[0].RTPTimestamp)
	return float64(len(live)-1) * 90000 / span
}

// TestCorePath: real ffmpeg pushes 720p30 over SRT; three real WHEP viewers
// get decodable H.264 at 30 fps with no sequence gaps.
func TestCorePath(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")

	var viewers []*viewer
	for i := 0; i < 3; i++ {
		viewers = append(viewers, dialViewer(t, ts, "live/cam1"))
	}
	for _, v := range viewers {
		v.waitLive(t, 90, 30*time.Second)
	}
	for i, v := range viewers {
		name := "viewer " + string(rune('A'+i))
		aus := v.units()
		checkStartsWithIDR(t, name, aus)
		st := v.Stats()
		if st.Width != 1280 || st.Height != 720 {
			t.Errorf("%s: SPS says %dx%d, want 1280x720", name, st.Width, st.Height)
		}
		if st.SeqGaps != 0 || st.BrokenAUs != 0 {
			t.Errorf("%s: %d sequence gaps, %d broken access units", name, st.SeqGaps, st.BrokenAUs)
		}
		if fps := liveFrameRate(aus); fps < 28 || fps > 32 {
			t.Errorf("%s: %.1f frames/s, want ~30", name, fps)
		}
		t.Logf("%s: %d AUs, %d packets, %d gaps, %dx%d, %.1f fps, first IDR %v after connect",
			name, len(aus), st.Packets, st.SeqGaps, st.Width, st.Height, liveFrameRate(aus),
			st.FirstIDRAt.Sub(st.ConnectedAt).Round(time.Millisecond))
	}
}

// TestJoinMidGOP: with a 2 s GOP, a viewer joining mid-GOP still gets its
// first IDR at once, from the hub's last-GOP cache.
//
// Not parallel: it bounds the time to the first IDR (200 ms), which a
// loaded machine stretches.
func TestJoinMidGOP(t *testing.T) {
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	// Join in the middle of the second GOP (frames 60..119).
	testkit.WaitFor(t, 20*time.Second, "frame 90", func() bool { return ts.framesIn("live/cam1") >= 90 })

	v := dialViewer(t, ts, "live/cam1")
	v.waitUnits(t, 30, 15*time.Second)
	st := v.Stats()
	checkStartsWithIDR(t, "late viewer", v.units())
	wait := st.FirstIDRAt.Sub(st.ConnectedAt)
	t.Logf("first IDR %v after ICE connected", wait.Round(time.Millisecond))
	if wait > 200*time.Millisecond {
		t.Errorf("first IDR came %v after connecting, want ≤ 200 ms", wait)
	}
	if st.SeqGaps != 0 {
		t.Errorf("%d sequence gaps", st.SeqGaps)
	}
}

// TestStalledViewer: one viewer's writer stalls until its queue overflows.
// The publisher and the other viewers lose nothing; the stalled one logs
// the exact message, skips to the next IDR and resumes with no sequence gap.
func TestStalledViewer(t *testing.T) {
	t.Parallel()
	held, release := stallOnce(t, func(c *config.Config) { c.Readers.QueueSize = 20 })
	ts := held.ts
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")

	a := dialViewer(t, ts, "live/cam1")
	b := dialViewer(t, ts, "live/cam1")
	slow := dialViewer(t, ts, "live/cam1")
	slow.waitUnits(t, 10, 15*time.Second)
	held.stall(sessionID(slow))
	ts.logs.WaitLog(t, 15*time.Second, "reader is too slow, discarding", "session="+sessionID(slow))
	release()
	// After the stall, wait for the slow viewer to play a while again:
	// 60 more pictures, and 30 past the skip the stall caused (the first
	// after the release). What it had queued before the skip arrives
	// first, and how much that is depends on how far the stalled sender
	// got, so a count alone can end the wait before the viewer has played
	// on from its skip. Later skips (a loaded machine's receiver reports
	// can show loss, and the sender then skips to an IDR as well) do not
	// restart the count: every skip is checked below to land on an IDR.
	n := slow.count()
	testkit.WaitFor(t, 20*time.Second, "the stalled viewer to play 30 pictures past its skip", func() bool {
		aus := slow.units()
		for _, j := range timestampJumps(aus) {
			if j >= n {
				return len(aus) >= n+60 && len(aus)-j >= 30
			}
		}
		return false
	})

	checkUndisturbed(t, "viewer A", a)
	checkUndisturbed(t, "viewer B", b)
	if ls := ts.logs.Lines("reader is too slow"); len(ls) > 0 {
		for _, l := range ls {
			if !strings.Contains(l, "session="+sessionID(slow)) {
				t.Errorf("a healthy viewer dropped frames: %s", l)
			}
		}
	}

	aus := slow.units()
	st := slow.Stats()
	if st.SeqGaps != 0 {
		t.Errorf("stalled viewer: %d sequence gaps, want 0 (seq must stay contiguous across drops)", st.SeqGaps)
	}
	jumps := timestampJumps(aus)
	for _, i := range jumps {
		if !aus[i].IDR {
			t.Errorf("stalled viewer resumed at a non-IDR picture (AU %d)", i)
		}
	}
	if len(jumps) == 0 {
		t.Errorf("stalled viewer shows no skipped frames; the stall did not overflow its queue")
	}
	if ts.hub.Paths()[0].FramesDropped == 0 {
		t.Errorf("path drop counter is 0")
	}
	t.Logf("stalled viewer skipped at AUs %v; log: %s", jumps, ts.logs.Lines("reader is too slow")[0])

}

// timestampJumps lists the access units that come more than a frame and
// a half after the one before them: where a viewer skipped pictures.
func timestampJumps(aus []whepclient.AccessUnit) []int {
	var jumps []int
	for i := 1; i < len(aus); i++ {
		if aus[i].RTPTimestamp-aus[i-1].RTPTimestamp > frameTicks+frameTicks/2 {
			jumps = append(jumps, i)
		}
	}
	return jumps
}

// checkUndisturbed asserts a viewer lost nothing: no sequence gap, no
// broken picture, and consecutive timestamps, i.e. every live frame.
func checkUndisturbed(t *testing.T, name string, v *viewer) {
	t.Helper()
	st := v.Stats()
	if st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("%s disturbed: %d sequence gaps, %d broken access units", name, st.SeqGaps, st.BrokenAUs)
	}
	aus := v.units()
	for i := 1; i < len(aus); i++ {
		if d := aus[i].RTPTimestamp - aus[i-1].RTPTimestamp; d > frameTicks+frameTicks/2 {
			t.Errorf("%s lost frames: timestamp step %d at access unit %d", name, d, i)
			return
		}
	}
}

// staller holds one chosen viewer's writer, through whep's BeforeWrite
// hook, from its next write until released: its queue fills while the
// publisher keeps writing, which is the slow-reader event.
type staller struct {
	ts      *testServer
	session atomic.Pointer[string]
	held    atomic.Bool
	release chan struct{}
	once    sync.Once
}

// stallOnce starts a server (configured by mutate) whose viewer named by
// stall is held once; the returned func releases it, and so does the end
// of the test, before the server stops.
func stallOnce(t *testing.T, mutate func(*config.Config)) (*staller, func()) {
	t.Helper()
	s := &staller{release: make(chan struct{})}
	s.ts = startServer(t, mutate, func(wc *whep.Config, _ *plane.Config) {
		wc.BeforeWrite = func(session string) <-chan struct{} {
			if id := s.session.Load(); id != nil && session == *id && s.held.CompareAndSwap(false, true) {
				return s.release // the stall under test
			}
			return nil
		}
	})
	release := func() { s.once.Do(func() { close(s.release) }) }
	t.Cleanup(release) // runs before startServer's cleanup stops the server
	return s, release
}

// stall holds session's writer from its next write on.
func (s *staller) stall(session string) { s.session.Store(&session) }
