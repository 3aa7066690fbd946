package ingest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// nullPackets is n MPEG-TS null packets (PID 0x1FFF): a valid transport
// stream that shows nothing.
func nullPackets(n int) []byte {
	out := make([]byte, 0, n*188)
	for range n {
		pkt := make([]byte, 188)
		pkt[0], pkt[1], pkt[2], pkt[3] = 0x47, 0x1f, 0xff, 0x10
		out = append(out, pkt...)
	}
	return out
}

// tablesOnly keeps the PAT and PMT packets of an ffmpeg clip (PIDs 0 and
// 0x1000): program tables that announce H.264 and never carry it.
func tablesOnly(t *testing.T) []byte {
	var out []byte
	for ts := clip(t, "h264.ts"); len(ts) >= 188; ts = ts[188:] {
		if pid := int(ts[1]&0x1f)<<8 | int(ts[2]); pid == 0 || pid == 0x1000 {
			out = append(out, ts[:188]...)
		}
	}
	if len(out) == 0 {
		t.Fatal("no PAT/PMT in h264.ts")
	}
	return out
}

// TestSquatterDoesNotHoldPath: a stranger on a free path without
// credentials who sends null packets does not make it busy; the encoder
// reconnecting from its own address gets in, claims the path with its
// first picture, and the stranger's connection is closed with the reason.
func TestSquatterDoesNotHoldPath(t *testing.T) {
	r := newRig(t, Config{})
	r.m.watchTimes = watchTimes{tables: time.Minute, media: time.Minute}
	squatter := newMemConn("live/s", 1, nullPackets(70))
	squatter.remote = "198.51.100.9:5000"
	squatter.holdEOF = make(chan struct{})
	squatterDone := r.serve(t, squatter)
	testkit.WaitFor(t, 5*time.Second, "the squatter's connection is pending", func() bool {
		r.m.mu.Lock()
		defer r.m.mu.Unlock()
		return len(r.m.pending["live/s"]) == 1
	})
	// A connection that shows no picture is no path of the API's.
	if ps, ok := pathStats(r.m, "live/s"); ok {
		t.Errorf("the squatter's pending connection is listed: %+v", ps)
	}
	id := srt.StreamID{Mode: srt.ModePublish, Path: "live/s"}
	if err := r.m.Admit(srt.Request{StreamID: id, Remote: "192.0.2.7:4000"}); err != nil {
		t.Fatalf("the encoder's reconnect: %v, want admitted while the squatter shows no picture", err)
	}

	encoder := newMemConn("live/s", 2, clip(t, "h264.ts"))
	encoder.holdEOF = make(chan struct{})
	encoderDone := r.serve(t, encoder)
	_ = wait(t, squatterDone)
	if got := squatter.EndReason(); got != reasonSuperseded {
		t.Errorf("squatter closed with %q, want %q", got, reasonSuperseded)
	}
	if st := r.hub.State("live/s"); !st.Publisher {
		t.Error("the encoder does not publish the path")
	}
	if p, ok := r.m.Problem("live/s"); ok {
		t.Errorf("the squatter's end left a problem on the path: %+v", p)
	}
	if err := r.m.Admit(srt.Request{StreamID: id, Remote: squatter.remote}); !errors.Is(err, hub.ErrPathBusy) {
		t.Errorf("the squatter again, once the encoder claimed the path: %v, want busy", err)
	}
	close(encoder.holdEOF)
	if err := wait(t, encoderDone); err != nil {
		t.Fatalf("encoder's Serve: %v", err)
	}
}

// TestNoStreamClosed: a connection that sends no program tables, or
// tables and then no media, is closed with the reason, which is counted.
func TestNoStreamClosed(t *testing.T) {
	for _, tc := range []struct {
		name, reason, text string
		data               func(t *testing.T) []byte
	}{
		{"null packets", ReasonNoTables, "no MPEG-TS program tables", func(*testing.T) []byte { return nullPackets(70) }},
		{"tables only", ReasonNoMedia, "no media for", tablesOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{})
			r.m.watchTimes = watchTimes{tables: time.Second, media: time.Second}
			c := newMemConn("live/n", 1, tc.data(t))
			c.holdEOF = make(chan struct{}) // it stays connected
			err := wait(t, r.serve(t, c))
			if err == nil || !strings.Contains(err.Error(), tc.text) || !strings.Contains(c.EndReason(), tc.text) {
				t.Fatalf("Serve: %v, closed with %q; want %q", err, c.EndReason(), tc.text)
			}
			if n := r.m.Refusals()[tc.reason]; n != 1 {
				t.Errorf("%s counted %d times, want 1", tc.reason, n)
			}
			r.logs.WaitLog(t, time.Second, "publisher closed: it shows no stream", "path=live/n", "reason="+tc.reason)
			if st := r.hub.State("live/n"); st.Publisher {
				t.Error("the path went live")
			}
		})
	}
}

// TestStalledPublisherTakenOver: with overridePublisher false, a live
// publisher holds its path against its own address while it streams, and
// loses it to that address once it has sent no media for the stall time;
// another address without credentials is still refused.
func TestStalledPublisherTakenOver(t *testing.T) {
	r := newRig(t, Config{Handover: func(string) Handover { return Handover{Takeover: TakeoverNever} }})
	r.m.watchTimes = watchTimes{media: time.Minute, stall: time.Second}
	data := clip(t, "h264.ts")
	first := newMemConn("live/st", 1, data)
	first.pauseAt = videoPES(data)[20] // streams 20 pictures, then stalls
	done := r.serve(t, first)
	<-first.paused
	id := srt.StreamID{Mode: srt.ModePublish, Path: "live/st"}
	// Right after its last picture the publisher has not stalled.
	if err := r.m.Admit(srt.Request{StreamID: id, Remote: "192.0.2.7:4001"}); !errors.Is(err, hub.ErrPathBusy) {
		t.Fatalf("same address while streaming: %v, want busy", err)
	}
	testkit.WaitFor(t, 10*time.Second, "the stalled path admits its publisher's address", func() bool {
		return r.m.Admit(srt.Request{StreamID: id, Remote: "192.0.2.7:4001"}) == nil
	})
	if err := r.m.Admit(srt.Request{StreamID: id, Remote: "198.51.100.9:4000"}); !errors.Is(err, hub.ErrPathBusy) {
		t.Errorf("another address: %v, want busy", err)
	}
	second := newMemConn("live/st", 2, data)
	second.remote = "192.0.2.7:4001"
	if err := wait(t, r.serve(t, second)); err != nil {
		t.Fatalf("the reconnect: %v", err)
	}
	if err := wait(t, done); err != nil || first.EndReason() != replacedReason {
		t.Fatalf("stalled publisher: %v, closed with %q; want %q", err, first.EndReason(), replacedReason)
	}
}
