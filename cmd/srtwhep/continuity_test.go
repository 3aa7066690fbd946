package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// checkContinued asserts that a viewer kept through a publisher change saw
// one unbroken RTP stream: contiguous sequence numbers, timestamps that
// never go back, and, where the new publisher's SPS first appears (each
// test gives it another resolution), a decodable IDR of the new stream. It
// returns the index of that IDR.
func checkContinued(t *testing.T, name string, v *viewer) int {
	t.Helper()
	st := v.Stats()
	if st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("%s: %d sequence gaps, %d broken access units, want none", name, st.SeqGaps, st.BrokenAUs)
	}
	aus := v.units()
	for i := 1; i < len(aus); i++ {
		if aus[i].FirstSeq != aus[i-1].LastSeq+1 {
			t.Errorf("%s: sequence jumps %d → %d at access unit %d", name, aus[i-1].LastSeq, aus[i].FirstSeq, i)
		}
		if d := int32(aus[i].RTPTimestamp - aus[i-1].RTPTimestamp); d < 0 {
			t.Errorf("%s: timestamp goes back by %d at access unit %d", name, -d, i)
		}
	}
	var firstSPS []byte
	change := 0
	for i, au := range aus {
		sps := spsOf(au)
		switch {
		case sps == nil:
		case firstSPS == nil:
			firstSPS = sps
		case !bytes.Equal(sps, firstSPS):
			change = i
		}
		if change > 0 {
			break
		}
	}
	if change == 0 {
		t.Fatalf("%s: no new publisher's SPS in %d access units", name, len(aus))
	}
	checkStartsWithIDR(t, name+" after the change", aus[change:])
	step := aus[change].RTPTimestamp - aus[change-1].RTPTimestamp
	t.Logf("%s: %d AUs, the new publisher's stream starts at AU %d, %.3f s of RTP time after the last picture of the old one",
		name, len(aus), change, float64(step)/90000)
	return change
}

// logTime is the time the server stamped on one of its log lines
// (time=RFC 3339).
func logTime(line string) (time.Time, error) {
	m := logTimeRe.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, fmt.Errorf("no time= in the log line %q", line)
	}
	return time.Parse(time.RFC3339Nano, m[1])
}

var logTimeRe = regexp.MustCompile(`(?:^|\s)time=(\S+)`)

// spsOf returns the SPS NAL unit of au, or nil.
func spsOf(au whepclient.AccessUnit) []byte {
	for _, n := range au.NALUs {
		if len(n) > 0 && h264.NALUType(n[0]&0x1f) == h264.NALUTypeSPS {
			return n
		}
	}
	return nil
}

// avArgs encode the reference picture with a 48 kHz AAC tone, so a
// publisher change is seen on both tracks.
func avArgs(size string) []string {
	return []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
		"-bf", "0", "-g", "60", "-b:v", "2500k", "-c:a", "aac", "-ar", "48000"}
}

// checkAudioContinued asserts contiguous sequence numbers and increasing
// timestamps on the audio track across the change, and audio from both
// publishers.
func checkAudioContinued(t *testing.T, name string, v *viewer) {
	t.Helper()
	_, audio := v.snapshot()
	if len(audio) < 100 {
		t.Fatalf("%s: only %d audio packets", name, len(audio))
	}
	step := int32(0)
	for i := 1; i < len(audio); i++ {
		if audio[i].SequenceNumber != audio[i-1].SequenceNumber+1 {
			t.Errorf("%s: audio sequence jumps %d → %d at packet %d", name, audio[i-1].SequenceNumber, audio[i].SequenceNumber, i)
		}
		d := int32(audio[i].RTPTimestamp - audio[i-1].RTPTimestamp)
		if d <= 0 {
			t.Errorf("%s: audio timestamp does not advance (%d) at packet %d", name, d, i)
		}
		step = max(step, d)
	}
	if step < 48000 {
		t.Errorf("%s: no gap in the audio timestamps (largest step %d); did the change happen?", name, step)
	}
}

// checkNotTarget asserts a viewer that was not the target of a publisher
// change lost nothing and kept its 30 fps.
func checkNotTarget(t *testing.T, name string, v *viewer) {
	t.Helper()
	checkUndisturbed(t, name, v)
	if fps := liveFrameRate(v.units()); fps < 28 || fps > 32 {
		t.Errorf("%s: %.1f frames/s, want ~30", name, fps)
	}
}

// waitSize waits until v's decoder has seen an SPS of the given size.
func waitSize(t *testing.T, v *viewer, w, h int, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, "the new publisher's resolution", func() bool {
		st := v.Stats()
		return st.Width == w && st.Height == h
	})
}

// checkKept asserts that the server still runs the viewer's original
// session: no new POST was needed.
func checkKept(t *testing.T, ts *testServer, name string, v *viewer) {
	t.Helper()
	select {
	case <-v.Done():
		t.Fatalf("%s: session ended: %v", name, v.Err())
	default:
	}
	id := sessionID(v)
	for _, s := range ts.whep.Sessions() {
		if s.ID == id {
			return
		}
	}
	t.Errorf("%s: session %s is gone from the server", name, id)
}

// TestPublisherRestart: the publisher is killed (SIGKILL, so nothing tells
// the server) and restarts 2 s later at another resolution. The server
// notices the silence within srt.readTimeout (2 s), the viewers keep their
// sessions and get the new stream from its first IDR with contiguous RTP
// sequence numbers and timestamps, and a viewer of another path keeps its
// 30 fps throughout.
func TestPublisherRestart(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/other"))
	first := startFFmpeg(t, avArgs("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/other")
	ts.waitPublisher(t, "live/cam1")
	testkit.WaitFor(t, 10*time.Second, "audio on live/cam1", func() bool {
		for _, p := range ts.ingest.Stats() {
			if p.Path == "live/cam1" && p.AudioOut != "" {
				return true
			}
		}
		return false
	})

	bystander := dialViewer(t, ts, "live/other")
	a := dialViewer(t, ts, "live/cam1")
	b := dialAudioViewer(t, ts, "live/cam1")
	a.waitUnits(t, 60, 20*time.Second)
	b.waitUnits(t, 60, 20*time.Second)

	killedAt := time.Now()
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill ffmpeg: %v", err)
	}
	line := ts.logs.WaitLog(t, 10*time.Second, "publisher closed", "path=live/cam1")
	// The silence is timed by the server's own events: from the last
	// picture of the dead publisher (as viewer A got it) to the server's
	// log line, stamped when it was written. A loaded machine stretches
	// both ends alike (a server behind on its input reads the last data
	// late, and the test may see the line late), and neither is the
	// timeout; the SRT connection's own end (peer idle, 5 s) or a read
	// timeout that never fires would still fail this.
	closedAt, err := logTime(line)
	if err != nil {
		t.Fatal(err)
	}
	old := a.units()
	lastPicture := old[len(old)-1].Received
	noticed := closedAt.Sub(lastPicture)
	t.Logf("publisher gone %v after its last picture reached viewer A (%v after the kill, %v until the test saw it): %s",
		noticed.Round(time.Millisecond), closedAt.Sub(killedAt).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond), line)
	if !strings.Contains(line, `reason="no data for 2s`) {
		t.Errorf("the dead publisher was closed for another reason than srt.readTimeout (2s): %s", line)
	}
	if noticed > 3500*time.Millisecond {
		t.Errorf("a SIGKILLed publisher was closed %v after its last picture, want ≤ 3.5 s (srt.readTimeout 2s)", noticed)
	}
	ts.logs.WaitLog(t, 5*time.Second, "keeping its viewers", "path=live/cam1")

	// Restart 2 s after the kill, as an encoder's reconnect would.
	select {
	case <-time.After(time.Until(killedAt.Add(2 * time.Second))):
	case <-t.Context().Done():
		return
	}
	startFFmpeg(t, avArgs("640x360"), ts.srtURL("publish:live/cam1"))
	waitSize(t, a, 640, 360, 20*time.Second)
	waitSize(t, b, 640, 360, 20*time.Second)
	na, nb := a.count(), b.count()
	a.waitUnits(t, na+60, 20*time.Second)
	b.waitUnits(t, nb+60, 20*time.Second)

	for _, c := range []struct {
		name string
		v    *viewer
	}{{"viewer A", a}, {"viewer B (with audio)", b}} {
		checkKept(t, ts, c.name, c.v)
		resume := checkContinued(t, c.name, c.v)
		if fps := liveFrameRate(c.v.units()[resume:]); fps < 28 || fps > 32 {
			t.Errorf("%s: %.1f frames/s from the new publisher, want ~30", c.name, fps)
		}
	}
	checkAudioContinued(t, "viewer B", b)
	checkNotTarget(t, "viewer of live/other", bystander)
}

// TestPublisherTakeover: a second publisher on a busy path takes it over at
// once; the first one's connection is closed with the reason in the log and
// the viewers go on with the new stream. With overridePublisher false the
// second one is refused as busy (SRT reject 1409) and nothing changes.
func TestPublisherTakeover(t *testing.T) {
	t.Parallel()
	t.Run("override", func(t *testing.T) {
		ts := startServer(t, nil)
		startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/other"))
		first := startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
		ts.waitPublisher(t, "live/other")
		ts.waitPublisher(t, "live/cam1")
		bystander := dialViewer(t, ts, "live/other")
		v := dialViewer(t, ts, "live/cam1")
		v.waitUnits(t, 60, 20*time.Second)

		startedAt := time.Now()
		startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
		line := ts.logs.WaitLog(t, 15*time.Second, "publisher closed", "path=live/cam1", "replaced by a new publisher")
		took := time.Since(startedAt)
		t.Logf("taken over %v after the second publisher started: %s", took.Round(time.Millisecond), line)
		// ffmpeg's own start and the SRT handshake take most of this; the
		// old publisher is not waited for.
		if took > 5*time.Second {
			t.Errorf("takeover took %v, want it at once (≤ 5 s including ffmpeg's start)", took)
		}
		if err := first.Wait(t, 15*time.Second); err == nil {
			t.Logf("replaced ffmpeg exited cleanly")
		}
		waitSize(t, v, 640, 360, 20*time.Second)
		n := v.count()
		v.waitUnits(t, n+60, 20*time.Second)
		checkKept(t, ts, "viewer", v)
		checkContinued(t, "viewer", v)
		checkNotTarget(t, "viewer of live/other", bystander)
	})
	t.Run("refused", func(t *testing.T) {
		ts := startServer(t, func(c *config.Config) { c.PathDefaults.OverridePublisher = config.TakeoverNever })
		startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
		ts.waitPublisher(t, "live/cam1")
		v := dialViewer(t, ts, "live/cam1")
		v.waitUnits(t, 30, 20*time.Second)

		second := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:live/cam1"))
		if err := second.Wait(t, 20*time.Second); err == nil {
			t.Errorf("second publisher on a busy path was accepted with overridePublisher false")
		}
		line := ts.logs.WaitLog(t, 5*time.Second, "srt publisher rejected", "path=live/cam1")
		if !regexp.MustCompile(`\(1409\)`).MatchString(line) {
			t.Errorf("rejection is not SRT reject 1409: %s", line)
		}
		n := v.count()
		v.waitUnits(t, n+30, 10*time.Second)
		checkNotTarget(t, "viewer", v)
	})
}
