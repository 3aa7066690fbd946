package rtpsend

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// fakeSource is a reader whose queue the test fills.
type fakeSource struct {
	queue []hub.Frame
	ended bool
	wake  func()
}

func (s *fakeSource) Poll() (hub.Frame, bool, error) {
	if s.ended {
		return hub.Frame{}, false, hub.ErrEnded
	}
	if len(s.queue) == 0 {
		return hub.Frame{}, false, nil
	}
	f := s.queue[0]
	s.queue = s.queue[1:]
	return f, true, nil
}
func (s *fakeSource) SetWake(wake func())  { s.wake = wake }
func (s *fakeSource) Backlog() int         { return len(s.queue) }
func (s *fakeSource) CountSent(_, _ int)   {}
func (s *fakeSource) push(fs ...hub.Frame) { s.queue = append(s.queue, fs...) }

// fakeOutput records the sequence numbers written.
type fakeOutput struct{ seqs []uint16 }

func (o *fakeOutput) WriteVideo(pkts []rtp.Packet) (int, error) {
	for i := range pkts {
		o.seqs = append(o.seqs, pkts[i].SequenceNumber)
	}
	return len(pkts), nil
}
func (o *fakeOutput) WriteAudio(*rtp.Packet) error  { return nil }
func (o *fakeOutput) WriteRTCP([]rtcp.Packet) error { return nil }
func (o *fakeOutput) last() uint16                  { return o.seqs[len(o.seqs)-1] }
func picture(pts int64, idr, catchUp bool) hub.Frame {
	au := &av.AccessUnit{PTS: pts, IDR: idr, Payloads: [][]byte{{0x65, 1}, {0x65, 2}}}
	return hub.Frame{Video: au, CatchUp: catchUp}
}

// TestSenderSteps drives a Sender as a plane would: catch-up frames are
// paced, a frame at the live edge asks for nothing but a wake, a NACK
// wakes it and is answered from the history at the next Step, and the
// path's end and the session's end finish it with their reasons.
func TestSenderSteps(t *testing.T) {
	src, out := &fakeSource{}, &fakeOutput{}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var ended []error
	s := New(Config{Out: out, Src: src, VideoSSRC: 1, VideoPT: 102, Session: ctx,
		Log: slog.New(slog.DiscardHandler), OnEnd: func(err error) { ended = append(ended, err) }})
	wakes := 0
	s.SetWake(func() { wakes++ })

	src.push(picture(0, true, true), picture(3000, false, true))
	at, done := s.Step(time.Now())
	if done || !at.After(time.Now()) || len(out.seqs) != 2 {
		t.Fatalf("catch-up: Step = %v, %v after %d packets; want a pace deadline after one picture", at, done, len(out.seqs))
	}
	if again, _ := s.Step(time.Now()); !again.Equal(at) || len(out.seqs) != 2 {
		t.Fatalf("an early Step wrote or moved the deadline: %v, %d packets", again, len(out.seqs))
	}
	s.paceUntil = time.Time{} // the deadline passed
	src.push(picture(6000, false, false))
	for len(src.queue) > 0 {
		if _, done := s.Step(time.Now()); done {
			t.Fatal("finished with frames queued")
		}
		s.paceUntil = time.Time{}
	}
	if at, _ := s.Step(time.Now()); !at.IsZero() {
		t.Fatalf("at the live edge Step asks to run at %v, want only a wake", at)
	}

	nacked := out.seqs[0]
	s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1, Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{nacked})}})
	if wakes != 1 {
		t.Fatalf("a NACK woke the sender %d times, want 1", wakes)
	}
	s.Step(time.Now())
	if out.last() != nacked || s.Retransmitted() != 1 {
		t.Fatalf("resent %d (%d retransmitted), want %d once", out.last(), s.Retransmitted(), nacked)
	}

	src.ended = true
	if _, done := s.Step(time.Now()); !done || len(ended) != 1 || !errors.Is(ended[0], ErrPublisherGone) {
		t.Fatalf("path ended: done %v, OnEnd %v", done, ended)
	}

	s2 := New(Config{Out: out, Src: &fakeSource{}, VideoSSRC: 1, Session: ctx,
		Log: slog.New(slog.DiscardHandler), OnEnd: func(err error) { ended = append(ended, err) }})
	s2.SetWake(func() {})
	cancel(errors.New("kicked"))
	if _, done := s2.Step(time.Now()); !done || len(ended) != 2 || ended[1].Error() != "kicked" {
		t.Fatalf("session ended: done %v, OnEnd %v", done, ended)
	}
}
