package mediaplane

import (
	"runtime"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// TestGoroutinesPerViewer: connected viewers own no goroutine. Six
// browser-like viewers connect; once their handshakes have detached, the
// media plane runs exactly the goroutines it ran with none (the
// demultiplexer and the janitor). One Flush then carries a frame to all
// of them, and closing the server ends every viewer with a close_notify
// and leaves no goroutine behind.
func TestGoroutinesPerViewer(t *testing.T) {
	srv, _ := newServer(t, nil)
	const base = 2 // the demultiplexer and the janitor
	testkit.WaitFor(t, 5*time.Second, "the server's two goroutines", func() bool {
		return mediaplaneGoroutines(t) == base
	})
	const n = 6
	var vs []*Viewer
	var pvs []*pionViewer
	var pts []uint8
	for range n {
		pv := newPionViewer(t, true)
		vc := codecsFor(t, pv.offer)
		v, answer, err := srv.NewViewer(mustOffer(t, pv.offer), vc)
		if err != nil {
			t.Fatal(err)
		}
		pv.accept(t, answer)
		vs, pvs, pts = append(vs, v), append(pvs, pv), append(pts, vc.Video.PayloadType)
	}
	for i := range vs {
		waitConnected(t, vs[i], pvs[i])
	}
	testkit.WaitFor(t, 10*time.Second, "handshake goroutines to end", func() bool {
		return mediaplaneGoroutines(t) <= base
	})
	t.Logf("%d viewers connected: %d media-plane goroutines (%d with none); %d goroutines in the process, the pion viewers' included",
		n, mediaplaneGoroutines(t), base, runtime.NumGoroutine())

	snd := srv.NewSender(0)
	au := frames(2)[1]
	for i, v := range vs {
		pkts := rtpstamp.NewStamper(v.VideoSSRC(), pts[i], 0, 0).Stamp(nil, au, false)
		if err := snd.Queue(v, pkts); err != nil {
			t.Fatal(err)
		}
	}
	calls := srv.Stats().Syscalls
	if err := snd.Flush(); err != nil {
		t.Fatal(err)
	}
	if c := srv.Stats().Syscalls - calls; c != 1 {
		t.Errorf("one frame to %d viewers took %d sendmmsg calls, want 1", n, c)
	}
	for _, pv := range pvs {
		testkit.WaitFor(t, 10*time.Second, "the frame at every viewer", func() bool {
			return pv.count(webrtc.RTPCodecTypeVideo) == len(au.Payloads)
		})
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v.Err() != plane.ErrServerClosed {
			t.Errorf("viewer %d: Err() = %v, want plane.ErrServerClosed", i, v.Err())
		}
		testkit.WaitFor(t, 5*time.Second, "the pion viewer to leave connected", func() bool {
			return pvs[i].pc.ConnectionState() != webrtc.PeerConnectionStateConnected
		})
	}
	testkit.WaitFor(t, 5*time.Second, "every media-plane goroutine to end", func() bool {
		return mediaplaneGoroutines(t) == 0
	})
	if _, _, err := srv.NewViewer(mustOffer(t, pvs[0].offer), codecsFor(t, pvs[0].offer)); err != plane.ErrServerClosed {
		t.Errorf("NewViewer after Close: %v, want plane.ErrServerClosed", err)
	}
}
