package ingest

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

func TestRecommendLatency(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		rtt     time.Duration
		loss    float64
		current time.Duration
		dropped bool
		want    time.Duration
	}{
		{100 * ms, 0.05, 120 * ms, true, 500 * ms}, // the measured path: 500 ms holds
		{101 * ms, 0.05, 120 * ms, true, 510 * ms}, // rounded up to 10 ms
		{100 * ms, 0.005, 120 * ms, false, 300 * ms},
		{100 * ms, 0.02, 120 * ms, false, 400 * ms},
		{100 * ms, 0.10, 120 * ms, false, 600 * ms},
		{100 * ms, 0.15, 120 * ms, false, 800 * ms},
		{100 * time.Microsecond, 0, 120 * ms, false, 60 * ms}, // loopback: the 20 ms floor
		// Late drops at a latency the rule calls enough: ask for more.
		{20 * ms, 0.02, 120 * ms, true, 180 * ms},
		{20 * ms, 0.02, 120 * ms, false, 80 * ms},
	} {
		if got := recommendLatency(c.rtt, c.loss, c.current, c.dropped); got != c.want {
			t.Errorf("recommendLatency(%v, %.3f, %v, %v) = %v, want %v", c.rtt, c.loss, c.current, c.dropped, got, c.want)
		}
	}
}

func TestLossRate(t *testing.T) {
	// 1000 packets sent, 50 lost, all 50 came back as retransmissions.
	st := srt.Stats{PacketsReceived: 1000, PacketsRetransmitted: 50, PacketsLost: 50}
	if got := lossRate(st); got != 0.05 {
		t.Errorf("lossRate = %v, want 0.05", got)
	}
	if got := lossRate(srt.Stats{}); got != 0 {
		t.Errorf("lossRate of nothing = %v, want 0", got)
	}
}

// TestLossAdvice: a skip is blamed on SRT only when SRT dropped packets
// since the previous one; the advice is one line per interval with the
// numbers to use, and what is pending is flushed at the end.
func TestLossAdvice(t *testing.T) {
	st := srt.Stats{RTTMs: 101, LatencyMs: 120, PacketsReceived: 1000, PacketsRetransmitted: 40, PacketsLost: 50}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	a := newLossAdvisor(func() srt.Stats { return st }, log)
	gap := errors.New("H.264 frame_num 5, expected 4: a reference picture was lost")

	if a.skip(gap) {
		t.Fatal("skip blamed on SRT although SRT dropped nothing")
	}
	a.skipped(tsdemux.Skip{Frames: 3, Cause: gap})
	if got := buf.String(); !strings.Contains(got, "SRT delivered every packet in time") || !strings.Contains(got, "frames=3") {
		t.Fatalf("first line %q, want the damage blamed on the stream", got)
	}
	buf.Reset()

	st.PacketsDropped = 7
	if !a.skip(gap) {
		t.Fatal("skip not blamed on SRT after SRT dropped late packets")
	}
	a.skipped(tsdemux.Skip{Frames: 20, Cause: gap, TransportLoss: true})
	if buf.Len() != 0 {
		t.Fatalf("second line within %v: %q", adviseEvery, buf.String())
	}
	a.flush(st, time.Now())
	line := buf.String()
	for _, want := range []string{
		"skipped 20 frames to the next keyframe after lost packets; SRT dropped 7 packets that arrived too late",
		"now 120 ms, RTT 101 ms, loss 5.0%: try 510 ms", "latency=510000", "recommended_ms=510", "srt_dropped=7",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("advice %q lacks %q", line, want)
		}
	}
	buf.Reset()
	a.flush(st, time.Now())
	if buf.Len() != 0 {
		t.Errorf("flush with nothing pending logged %q", buf.String())
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
