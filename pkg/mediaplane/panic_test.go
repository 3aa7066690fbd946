package mediaplane

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// TestViewerInputPanics: a panic while one viewer's datagram is handled
// on the goroutine every viewer's datagrams go through (here its RTCP
// consumer's) ends that viewer, logged with the stack and counted; the
// goroutine goes on, and another viewer's RTCP still arrives.
func TestViewerInputPanics(t *testing.T) {
	srv, logs := newServer(t, nil)
	bad, good := newRawPeer(t, srv), newRawPeer(t, srv)
	vcBad := h264Codec
	vcBad.OnRTCP = func([]rtcp.Packet) {
		var m map[string]int
		m["pli"]++ // a real runtime panic: assignment to entry in nil map
	}
	var goodRTCP atomic.Int64
	vcGood := h264Codec
	vcGood.OnRTCP = func([]rtcp.Packet) { goodRTCP.Add(1) }
	vb, vg := bad.join(srv, vcBad), good.join(srv, vcGood)
	bad.connect(srv, vb)
	good.connect(srv, vg)
	before := panics.Counts()[panics.ViewerInput]

	pli := func(p *rawPeer, ssrc uint32) {
		b, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.PictureLossIndication{SenderSSRC: 7, MediaSSRC: ssrc}})
		enc, err := p.enc.EncryptRTCP(nil, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.conn.WriteToUDPAddrPort(enc, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	pli(bad, vb.VideoSSRC())
	select {
	case <-vb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the viewer whose datagram panicked was not ended")
	}
	if err := vb.Err(); !errors.Is(err, plane.ErrFailed) {
		t.Errorf("it ended with %v, want %v", err, plane.ErrFailed)
	}
	logs.WaitLog(t, 5*time.Second, "panic recovered", "where="+panics.ViewerInput, "panic_test.go")
	if n := panics.Counts()[panics.ViewerInput] - before; n != 1 {
		t.Errorf("%d panics counted, want 1", n)
	}
	pli(good, vg.VideoSSRC())
	testkit.WaitFor(t, 5*time.Second, "the other viewer's RTCP", func() bool { return goodRTCP.Load() == 1 })
	select {
	case <-vg.Done():
		t.Fatalf("the other viewer ended: %v", vg.Err())
	default:
	}
}
