package mediaplane

import (
	"encoding/binary"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// movingStepper is a pooled viewer's sender whose first step is where a
// nomination lands: the pool has checked the route (UDP), the viewer
// nominates its ICE-TCP pair, and then the step writes about a megabyte,
// far more than a link whose peer reads nothing holds.
type movingStepper struct {
	c        *conn
	pkts     []rtp.Packet
	nominate func()
	wake     atomic.Pointer[func()] // set by whichever goroutine drives it
	steps    atomic.Int32
	// pooledAfter is whether a step after the first ran in a pool
	// worker's batch: 1 yes, 2 no.
	pooledAfter atomic.Int32
}

func (s *movingStepper) SetWake(wake func()) { s.wake.Store(&wake) }

func (s *movingStepper) Step(time.Time) (time.Time, bool) {
	select {
	case <-s.c.v.Done():
		return time.Time{}, true
	default:
	}
	if s.steps.Add(1) > 1 {
		if s.c.batch != nil {
			s.pooledAfter.CompareAndSwap(0, 1)
		} else {
			s.pooledAfter.CompareAndSwap(0, 2)
		}
		return time.Time{}, false
	}
	s.nominate()
	for range 120 {
		_, _ = s.c.WriteVideo(s.pkts)
	}
	return time.Time{}, false
}

// countStepper writes one frame per wake that finds due set.
type countStepper struct {
	c    *conn
	pkts []rtp.Packet
	due  atomic.Bool
	wake func()
}

func (s *countStepper) SetWake(wake func()) { s.wake = wake }

func (s *countStepper) Step(time.Time) (time.Time, bool) {
	select {
	case <-s.c.v.Done():
		return time.Time{}, true
	default:
	}
	if s.due.CompareAndSwap(true, false) {
		_, _ = s.c.WriteVideo(s.pkts)
	}
	return time.Time{}, false
}

// TestPoolNominationToFullTCP: one pool worker steps a UDP viewer and a
// viewer whose ICE-TCP nomination arrives in the middle of its step, onto
// a connection whose peer reads nothing. The worker must not write to
// that connection (it would block for good, and every viewer in its
// batches with it): the UDP viewer keeps receiving every frame, and the
// moved viewer is stepped on a goroutine of its own from then on.
func TestPoolNominationToFullTCP(t *testing.T) {
	srv := newTCPServer(t, nil)
	p := &Plane{srv: srv, pool: newWriterPool(srv)}
	p.senders = senderPool{srv: srv, free: make(chan *Sender, 2*runtime.GOMAXPROCS(0))}
	p.pool.pacer.start()
	p.pool.startWorkers(1)
	t.Cleanup(p.pool.close) // after the viewers' Close, which unblock any write

	idr := frames(1)[0]
	stamp := func(v *Viewer) []rtp.Packet {
		return rtpstamp.NewStamper(v.VideoSSRC(), 102, 0, 0).Stamp(nil, idr, false)
	}

	// The TCP peer: tiny buffers and it never reads, so its link is full
	// after a few kilobytes.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	peer, err := d.Dial("tcp4", srv.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	var tc *tcpConn
	testkit.WaitFor(t, 5*time.Second, "the ICE-TCP connection to be accepted", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for c := range srv.tcpConns {
			tc = c
		}
		return tc != nil
	})
	_ = tc.conn.SetWriteBuffer(4096)

	udpA, udpB := newSink(t, false), newSink(t, false)
	va, _ := keyedViewer(t, srv, udpA.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	vb, _ := keyedViewer(t, srv, udpB.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	creds := newCreds(va, "tcppeer")
	srv.mu.Lock()
	va.creds = creds
	srv.byUfrag[creds.ufrag] = creds
	srv.mu.Unlock()
	ca, cb := &conn{plane: p, v: va}, &conn{plane: p, v: vb}
	t.Cleanup(cb.Close)

	a := &movingStepper{c: ca, pkts: stamp(va)}
	a.nominate = func() {
		req, err := stun.Build(stun.TransactionID, stun.BindingRequest,
			stun.NewUsername(creds.ufrag+":"+creds.remoteUfrag), stun.RawAttribute{Type: stun.AttrUseCandidate},
			stun.NewShortTermIntegrity(creds.pwd), stun.Fingerprint)
		if err != nil {
			panic(err)
		}
		frame := binary.BigEndian.AppendUint16(nil, uint16(len(req.Raw)))
		if _, err := peer.Write(append(frame, req.Raw...)); err != nil {
			panic(err)
		}
		// The route moves on the connection's reader goroutine; bounded
		// wait, and the test fails below if it never does.
		for i := 0; i < 10000 && !va.OverTCP(); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() {
		// As the session's end does: the sender's last wake, once the
		// viewer is closed.
		va.Close()
		(*a.wake.Load())()
		ca.Close()
	})
	b := &countStepper{c: cb, pkts: stamp(vb)}
	p.pool.add(cb, b)
	p.pool.add(ca, a)
	testkit.WaitFor(t, 10*time.Second, "the nominating step", func() bool { return a.steps.Load() >= 1 && va.OverTCP() })

	const want = 30
	for i := range want {
		b.due.Store(true)
		b.wake()
		testkit.WaitFor(t, 10*time.Second, "the UDP viewer's next frame from the shared worker", func() bool {
			return udpB.count.Load() >= int64((i+1)*len(b.pkts))
		})
	}
	(*a.wake.Load())()
	testkit.WaitFor(t, 10*time.Second, "the moved viewer's next step", func() bool { return a.pooledAfter.Load() != 0 })
	if a.pooledAfter.Load() == 1 {
		t.Error("the viewer on ICE-TCP is still stepped by the pool")
	}
	if n := srv.Stats().SendErrors; n != 0 {
		t.Logf("send errors: %d", n)
	}
	t.Logf("UDP viewer got %d frames (%d datagrams) after the other viewer moved to a full ICE-TCP link",
		want, udpB.count.Load())
}
