package mediaplane

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// rebinder stands between a viewer and the server as a network that
// changes: the viewer sends to front, and what it sends reaches the
// server from a source address of the rebinder's own (out), so the server
// sees the viewer at a new address.
type rebinder struct {
	front, out *net.UDPConn
	toServer   netip.AddrPort
	viewer     atomic.Pointer[netip.AddrPort]
	media      atomic.Int64 // RTP/RTCP datagrams carried to the viewer
}

func newRebinder(t *testing.T, toServer netip.AddrPort, frontIP, outIP net.IP) *rebinder {
	t.Helper()
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: frontIP})
	if err != nil {
		t.Fatal(err)
	}
	out, err := net.ListenUDP("udp4", &net.UDPAddr{IP: outIP})
	if err != nil {
		front.Close()
		t.Fatal(err)
	}
	rb := &rebinder{front: front, out: out, toServer: toServer}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			rb.viewer.Store(&from)
			_, _ = out.WriteToUDPAddrPort(buf[:n], toServer)
		}
	})
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, err := out.Read(buf)
			if err != nil {
				return
			}
			if n > 0 && buf[0] >= 128 {
				rb.media.Add(1)
			}
			if to := rb.viewer.Load(); to != nil {
				_, _ = front.WriteToUDPAddrPort(buf[:n], *to)
			}
		}
	})
	t.Cleanup(func() { front.Close(); out.Close(); wg.Wait() })
	return rb
}

func (rb *rebinder) frontAddr() netip.AddrPort { return rb.front.LocalAddr().(*net.UDPAddr).AddrPort() }
func (rb *rebinder) outAddr() netip.AddrPort   { return rb.out.LocalAddr().(*net.UDPAddr).AddrPort() }

// TestPionViewerMoves: a real pion viewer whose network changes (an ICE
// restart whose checks reach the server from 127.0.0.3, as after a move
// from one network to another) keeps playing: the new address answers
// our consent check, so media follows it within a round trip, and the
// viewer receives frames there.
func TestPionViewerMoves(t *testing.T) {
	srv, logs := newServer(t, nil)
	pv := newPionViewer(t, false)
	vc := codecsFor(t, pv.offer)
	v, answer := joinPion(t, srv, pv, vc)
	first := v.Remote()

	snd := srv.NewSender(0)
	st := rtpstamp.NewStamper(v.VideoSSRC(), vc.Video.PayloadType, 1, 1)
	aus := frames(8)
	sent := 0
	// sendUntil sends frames until cond holds, each after the viewer has
	// the previous one's packets, within a bounded number of frames.
	sendUntil := func(what string, cond func() bool) {
		t.Helper()
		base, sentPkts := pv.count(webrtc.RTPCodecTypeVideo), 0
		for i := 0; !cond(); i++ {
			if i == 500 {
				t.Fatalf("%s: not after %d frames", what, i)
			}
			pkts := st.Stamp(nil, aus[sent%len(aus)], false)
			if err := snd.SendFrame(v, pkts); err != nil {
				t.Fatal(err)
			}
			sent++
			// A window of a frame keeps loopback buffers from
			// overflowing. Until media moves, pion (restarted, knowing only
			// the new candidate) drops what still comes from the old one.
			want := base + sentPkts - len(pkts)
			sentPkts += len(pkts)
			testkit.WaitFor(t, 10*time.Second, what+": the viewer to keep up", func() bool {
				return pv.count(webrtc.RTPCodecTypeVideo) >= want || cond()
			})
		}
	}
	sendUntil("frames before the move", func() bool { return pv.count(webrtc.RTPCodecTypeVideo) >= 20 })

	srvAddr := srv.LocalAddr().AddrPort()
	rb := newRebinder(t, srvAddr, net.IPv4(127, 0, 0, 5), net.IPv4(127, 0, 0, 3))
	restart, err := pv.pc.CreateOffer(&webrtc.OfferOptions{ICERestart: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pv.pc.SetLocalDescription(restart); err != nil {
		t.Fatal(err)
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(restart.SDP); err != nil {
		t.Fatal(err)
	}
	newUfrag, _ := sd.MediaDescriptions[0].Attribute("ice-ufrag")
	newPwd, _ := sd.MediaDescriptions[0].Attribute("ice-pwd")
	ufrag, pwd, err := v.RestartICE(newUfrag, newPwd)
	if err != nil {
		t.Fatal(err)
	}
	var old sdp.SessionDescription
	if err := old.UnmarshalString(answer); err != nil {
		t.Fatal(err)
	}
	oldUfrag, _ := old.MediaDescriptions[0].Attribute("ice-ufrag")
	oldPwd, _ := old.MediaDescriptions[0].Attribute("ice-pwd")
	// The restarted answer reaches the server only through the rebinder.
	moved := strings.NewReplacer("ice-ufrag:"+oldUfrag, "ice-ufrag:"+ufrag, "ice-pwd:"+oldPwd, "ice-pwd:"+pwd,
		" "+srvAddr.Addr().String()+" "+strconv.Itoa(int(srvAddr.Port()))+" ",
		" "+rb.frontAddr().Addr().String()+" "+strconv.Itoa(int(rb.frontAddr().Port()))+" ").Replace(answer)
	if moved == answer || !strings.Contains(moved, rb.frontAddr().Addr().String()) {
		t.Fatalf("could not point the answer at the rebinder:\n%s", answer)
	}
	pv.accept(t, moved)

	start := time.Now()
	sendUntil("media to follow the viewer to its new address", func() bool { return v.Remote() == rb.outAddr() })
	t.Logf("media moved from %v to %v %v after the restart", first, v.Remote(), time.Since(start).Round(time.Millisecond))
	at := rb.media.Load()
	got := pv.count(webrtc.RTPCodecTypeVideo)
	sendUntil("frames at the new address", func() bool {
		return rb.media.Load()-at >= 20 && pv.count(webrtc.RTPCodecTypeVideo)-got >= 20
	})
	if err := v.Err(); err != nil {
		t.Fatalf("viewer ended: %v", err)
	}
	logs.WaitLog(t, time.Second, "viewer route changed", "media_remote="+rb.outAddr().String())
}
