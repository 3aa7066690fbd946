package ingest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// attachOnConnect attaches a video reader of path when its first
// publisher is announced, before any picture: it then sees every one.
func attachOnConnect(t *testing.T, r *rig, path string) *atomic.Pointer[hub.Reader] {
	var rd atomic.Pointer[hub.Reader]
	r.onEvent = func(e events.Event) {
		if e.Kind == events.PublisherConnected && e.Path == path && rd.Load() == nil {
			rd.Store(r.reader(t, path, (*hub.Reader).Attach))
		}
	}
	return &rd
}

// TestHandover: a second publisher of a busy path that is entitled to it
// takes it over: the first is closed with the reason in its event, the
// viewers stay attached and go on with the newcomer's stream at its IDR,
// in a new generation, and the path's totals hold both publishers. One
// that is not entitled is refused as busy, with the fix in the error,
// and the first streams on.
func TestHandover(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rule         Takeover
		credentialed bool
		remote       string // the second publisher's; the first is 192.0.2.7:4000
		refused      string // "" = takes over
	}{
		{"any", TakeoverAny, false, "192.0.2.8:4000", ""},
		{"entitled by credentials", TakeoverEntitled, true, "192.0.2.8:4000", ""},
		{"entitled by address", TakeoverEntitled, false, "192.0.2.7:4001", ""},
		{"another address", TakeoverEntitled, false, "192.0.2.8:4000", "set overridePublisher: any"},
		{"never", TakeoverNever, true, "192.0.2.7:4001", "overridePublisher is false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			override := tc.refused == ""
			r := newRig(t, Config{Handover: func(string) Handover {
				return Handover{Takeover: tc.rule, Credentialed: tc.credentialed, Grace: time.Minute}
			}})
			rd := attachOnConnect(t, r, "live/h")
			data := clip(t, "h264.ts")
			first := newMemConn("live/h", 1, data)
			starts := videoPES(data)
			first.pauseAt = starts[20] // the first publisher streams on, 20 pictures in
			firstDone := r.serve(t, first)
			<-first.paused

			second := newMemConn("live/h", 2, data)
			second.remote = tc.remote
			secondErr := wait(t, r.serve(t, second))
			if !override {
				if !errors.Is(secondErr, hub.ErrPathBusy) || !strings.Contains(secondErr.Error(), tc.refused) {
					t.Fatalf("second publisher: %v, want ErrPathBusy saying %q", secondErr, tc.refused)
				}
				close(first.resume)
			} else if secondErr != nil {
				t.Fatalf("second publisher: %v", secondErr)
			}
			if err := wait(t, firstDone); err != nil {
				t.Fatalf("first publisher: %v, want nil (its connection closed)", err)
			}

			frames := drain(rd.Load())
			var gens []uint32 // one per publisher seen, in order
			perGen := map[uint32]int{}
			for _, f := range frames {
				if f.Video == nil {
					continue
				}
				if len(gens) == 0 || gens[len(gens)-1] != f.Gen {
					gens = append(gens, f.Gen)
					if !f.Video.IDR {
						t.Errorf("generation %d starts without an IDR", f.Gen)
					}
				}
				perGen[f.Gen]++
			}
			ps, _ := pathStats(r.m, "live/h")
			ev := r.seen()
			if !override {
				if len(gens) != 1 || perGen[gens[0]] != 50 || ps.Totals.IngestFrames != 50 {
					t.Errorf("generations %v with %v pictures, totals %d; want the first publisher's 50 alone", gens, perGen, ps.Totals.IngestFrames)
				}
				if len(ev) != 2 || ev[0].ID != "1" || ev[1].ID != "1" || ev[1].Reason != "publisher disconnected" {
					t.Errorf("events %+v, want only the first publisher's", ev)
				}
				return
			}
			// The first publisher wrote the pictures completed before its
			// pause (not picture 19, which only the end of its stream
			// completes, once it no longer owns the path), the second the
			// whole clip.
			if len(gens) != 2 || perGen[gens[0]] != 19 || perGen[gens[1]] != 50 {
				t.Fatalf("generations %v with %v pictures, want the first publisher's 19, then the second's 50", gens, perGen)
			}
			if ps.Totals.IngestFrames != 19+50 {
				t.Errorf("path totals %d pictures, want both publishers' %d", ps.Totals.IngestFrames, 19+50)
			}
			byID := map[string][]events.Event{}
			for _, e := range ev {
				byID[e.ID] = append(byID[e.ID], e)
			}
			if e := byID["1"]; len(e) != 2 || e[1].Kind != events.PublisherDisconnected || e[1].Reason != replacedReason {
				t.Errorf("first publisher's events %+v, want it replaced", e)
			}
			if e := byID["2"]; len(e) != 2 || e[0].Remote != second.remote || e[1].Reason != "publisher disconnected" {
				t.Errorf("second publisher's events %+v", e)
			}
			r.logs.WaitLog(t, time.Second, "publisher takes the path over", "remote="+second.remote, "previous="+first.remote)
		})
	}
}

// TestKick: Kick closes the path's publisher with "kicked", which its
// event reports; a path without one is no kick.
func TestKick(t *testing.T) {
	r := newRig(t, Config{})
	c := newMemConn("live/k", 5, clip(t, "h264.ts"))
	c.pauseAt = videoPES(c.data)[10]
	done := r.serve(t, c)
	<-c.paused
	if r.m.Kick("live/other") {
		t.Error("Kick of a path without a publisher reported true")
	}
	if !r.m.Kick("live/k") {
		t.Fatal("Kick of a streaming path reported false")
	}
	if err := wait(t, done); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	if ev := r.seen(); len(ev) != 2 || ev[1].Kind != events.PublisherDisconnected || ev[1].Reason != "kicked" {
		t.Errorf("events %+v, want disconnected with reason kicked", ev)
	}
	// Paused at picture 10's first packet, pictures 0-8 were written, and
	// picture 9 when the end of the stream completed it.
	if ps, _ := pathStats(r.m, "live/k"); ps.Publisher != nil || ps.Totals.IngestFrames != 10 {
		t.Errorf("stats %+v, want no publisher and the 10 pictures before the pause", ps)
	}
}

// TestSkipToIDR: a lost TS packet costs the viewers the pictures up to
// the next IDR, and their stream resumes there. The loss is counted as
// the encoder's damage when SRT delivered every packet in time, and as
// SRT's late drops (with the latency advice) when SRT dropped packets
// meanwhile.
func TestSkipToIDR(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lateDrops int64
		advice    string
	}{
		{"damaged input", 0, "SRT delivered every packet in time, so the damage came with the stream"},
		{"late packets", 4, "SRT dropped 4 packets that arrived too late: raise srt.latency (now 120 ms, RTT 40 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{})
			rd := attachOnConnect(t, r, "live/s")
			data, lost := dropPacket(clip(t, "h264.ts"), 10)
			c := newMemConn("live/s", 9, data)
			c.lateFrom, c.lateDrops = lost, tc.lateDrops
			if err := wait(t, r.serve(t, c)); err != nil {
				t.Fatal(err)
			}
			var idr []bool
			for _, f := range drain(rd.Load()) {
				if f.Video != nil {
					idr = append(idr, f.Video.IDR)
				}
			}
			// Pictures 0-9 whole; 10 is lost with its packet (a decode
			// error); 11-29 are dropped, since they refer to it; the viewer
			// resumes at the IDR, picture 30.
			if len(idr) != 30 || !idr[0] || idr[9] || !idr[10] {
				t.Errorf("%d pictures to the viewer (IDR flags %v), want 10, then 20 from the next IDR", len(idr), idr)
			}
			tot := r.m.Stats()[0].Totals
			dec, late := uint64(19), uint64(0)
			if tc.lateDrops > 0 {
				dec, late = 0, 19
			}
			if tot.DroppedDecodeError != dec || tot.DroppedSRTLate != late || tot.DecodeErrors != 1 || tot.IngestFrames != 30 {
				t.Errorf("totals %+v, want %d dropped for damage and %d for SRT", tot, dec, late)
			}
			r.logs.WaitLog(t, time.Second, "skipped 19 frames to the next keyframe", tc.advice)
		})
	}
}

// dropPacket removes the second TS packet of the nth video PES, as one
// lost SRT packet would, and returns where the gap is.
func dropPacket(ts []byte, nth int) ([]byte, int) {
	at := videoPES(ts)[nth] + 188
	for ts[at+1]&0x1f != 1 || ts[at+2] != 0 { // the next packet of PID 256
		at += 188
	}
	return append(ts[:at:at], ts[at+188:]...), at
}

// TestHook: the access hook decides on a publisher before its stream
// claims the path; a pull this server dialled itself is not asked about,
// nor announced as a publisher (the edge announces its source).
func TestHook(t *testing.T) {
	var asked atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(hook.Close)
	policy := auth.NewPolicy(auth.Rules{Hook: auth.HookConfig{URL: hook.URL, Timeout: 5 * time.Second}}, auth.ThrottleConfig{})
	r := newRig(t, Config{Policy: policy})

	err := wait(t, r.serve(t, newMemConn("live/p", 1, clip(t, "h264.ts"))))
	if d := auth.AsDenied(err); d == nil || d.Reason != auth.ReasonHookDenied || asked.Load() != 1 {
		t.Fatalf("Serve = %v after %d hook calls, want refused by the hook once", err, asked.Load())
	}
	if _, ok := pathStats(r.m, "live/p"); ok || len(r.seen()) != 0 || r.hub.State("live/p") != (hub.PathState{}) {
		t.Errorf("a refused publisher left stats, events %+v or hub state", r.seen())
	}

	pull := newMemConn("live/p", 2, clip(t, "h264.ts"))
	pull.dialed = true
	if err := wait(t, r.serve(t, pull)); err != nil {
		t.Fatalf("dialled conn: %v", err)
	}
	ps, _ := pathStats(r.m, "live/p")
	if asked.Load() != 1 || len(r.seen()) != 0 || ps.Totals.IngestFrames != 50 {
		t.Errorf("dialled conn: %d hook calls, events %+v, %d pictures; want no call, no event, 50 pictures",
			asked.Load(), r.seen(), ps.Totals.IngestFrames)
	}
	if !strings.Contains(r.logs.String(), "path=live/p") {
		t.Error("the pipeline logged nothing about the path")
	}
}
