package whep

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/whepclient"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// lossyConn drops every nth media datagram a viewer receives, as a lossy
// last mile would; STUN, DTLS and RTCP pass, and a retransmission (a
// sequence number seen before) is never dropped again.
type lossyConn struct {
	net.PacketConn
	every   int
	seen    atomic.Int64
	dropped atomic.Int64
	lost    sync.Map // sequence numbers dropped once
	reports atomic.Int64
}

func (c *lossyConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err == nil && n >= 2 && b[0]&0xc0 == 0x80 && b[1] == 200 {
			c.reports.Add(1) // an SRTCP sender report: its header is in clear
		}
		if err != nil || n < 2 || b[0]&0xc0 != 0x80 || (b[1] >= 192 && b[1] <= 223) {
			return n, addr, err
		}
		seq := uint16(b[2])<<8 | uint16(b[3])
		if _, again := c.lost.Load(seq); again {
			return n, addr, err
		}
		if k := c.seen.Add(1); k > 50 && k%int64(c.every) == 0 {
			c.lost.Store(seq, true)
			c.dropped.Add(1)
			continue
		}
		return n, addr, err
	}
}

// TestNACKAnsweredFromSharedHistory: a real pion viewer with a NACK
// generator loses every 40th packet on the way in; the server resends them
// from its shared-payload history, and the viewer ends with no gaps.
func TestNACKAnsweredFromSharedHistory(t *testing.T) {
	clip := makeClip(t, 60, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, nil)
	feed(t, p, clip)

	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lossy := &lossyConn{PacketConn: uc, every: 40}
	mux := webrtc.NewICEUDPMux(nil, lossy)
	defer mux.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	viewer, err := whepclient.Dial(ctx, hs.URL+"/live/cam1/whep", whepclient.Options{
		NACK: true,
		SettingEngine: func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetICEUDPMux(mux)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	if err := viewer.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "600 packets", func() bool { return viewer.Stats().Packets >= 600 })
	resentNow := func() (n uint64) {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, s := range srv.sessions {
			if snd := s.snd.Load(); snd != nil {
				n += snd.Retransmitted()
			}
		}
		return n
	}
	// The last NACKs need a round trip to be answered.
	testkit.WaitFor(t, 10*time.Second, "retransmissions to fill every sequence gap", func() bool { return viewer.Stats().SeqGaps == 0 })
	resent := resentNow()
	if lossy.dropped.Load() == 0 || resent == 0 {
		t.Fatalf("dropped %d, resent %d: the test lost nothing or the server answered no NACK", lossy.dropped.Load(), resent)
	}
	testkit.WaitFor(t, 5*time.Second, "a sender report", func() bool { return lossy.reports.Load() > 0 })
	t.Logf("dropped %d packets on the way in, server resent %d, viewer gaps %d", lossy.dropped.Load(), resent, viewer.Stats().SeqGaps)
}
