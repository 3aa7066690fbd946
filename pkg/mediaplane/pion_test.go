package mediaplane

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// rtcpLog keeps what a test needs from OnRTCP. The callback copies: the
// packets are only lent for the call.
type rtcpLog struct {
	mu    sync.Mutex
	rrFor map[uint32]int      // receiver report blocks per media SSRC
	nacks map[uint32][]uint16 // NACKed sequence numbers per media SSRC
	kinds map[string]int
}

func newRTCPLog() *rtcpLog {
	return &rtcpLog{rrFor: map[uint32]int{}, nacks: map[uint32][]uint16{}, kinds: map[string]int{}}
}

func (l *rtcpLog) on(pkts []rtcp.Packet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.ReceiverReport:
			l.kinds["rr"]++
			for _, r := range p.Reports {
				l.rrFor[r.SSRC]++
			}
		case *rtcp.TransportLayerNack:
			l.kinds["nack"]++
			for _, pair := range p.Nacks {
				l.nacks[p.MediaSSRC] = append(l.nacks[p.MediaSSRC], pair.PacketList()...)
			}
		default:
			l.kinds["other"]++
		}
	}
}

// kindCounts copies the counts per RTCP kind: the demultiplexer may be
// adding to them.
func (l *rtcpLog) kindCounts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.kinds)
}

func (l *rtcpLog) reports(ssrc uint32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rrFor[ssrc]
}

func (l *rtcpLog) nacked(ssrc uint32, seq uint16) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.nacks[ssrc], seq)
}

// TestPionViewer runs a whole session against a real pion/webrtc viewer
// with pion's default interceptors, as a browser would behave: ICE-lite
// connects, DTLS completes, every video and audio packet arrives in order
// with its bytes, receiver reports and a NACK come back through OnRTCP,
// the connection holds for more than ten seconds of consent checks, and
// closing makes the viewer leave "connected" at once (DTLS close_notify).
func TestPionViewer(t *testing.T) {
	srv, logs := newServer(t, nil)
	pv := newPionViewer(t, true)
	vc := codecsFor(t, pv.offer)
	rl := newRTCPLog()
	vc.OnRTCP = rl.on
	v, answer, err := srv.NewViewer(mustOffer(t, pv.offer), vc)
	if err != nil {
		t.Fatal(err)
	}
	pv.accept(t, answer)
	waitConnected(t, v, pv)
	connectedAt := time.Now()
	logs.WaitLog(t, time.Second, "viewer connected", "srtp=SRTP_AEAD_AES_128_GCM")

	snd := srv.NewSender(0)
	st := rtpstamp.NewStamper(v.VideoSSRC(), vc.Video.PayloadType, 65000, 1234) // crosses the sequence wrap
	var sent []rtp.Packet
	var pkts []rtp.Packet
	// sendAU stamps and sends one access unit, leaving out the packet at
	// index skip (-1: none), and waits until the viewer is at most a
	// window behind, so loopback buffers never overflow.
	sendAU := func(au *av.AccessUnit, skip int) []rtp.Packet {
		pkts = st.Stamp(pkts, au, false)
		out := pkts
		if skip >= 0 {
			out = slices.Delete(slices.Clone(pkts), skip, skip+1)
		}
		if err := snd.SendFrame(v, out); err != nil {
			t.Fatalf("SendFrame: %v", err)
		}
		sent = append(sent, out...)
		testkit.WaitFor(t, 10*time.Second, "the viewer to keep up", func() bool {
			return pv.count(webrtc.RTPCodecTypeVideo) >= len(sent)-64
		})
		return pkts
	}
	aus := frames(80)
	for _, au := range aus {
		sendAU(au, -1)
	}
	if len(sent) < 300 {
		t.Fatalf("test sends only %d packets, want a few hundred", len(sent))
	}
	testkit.WaitFor(t, 10*time.Second, "every video packet", func() bool {
		return pv.count(webrtc.RTPCodecTypeVideo) >= len(sent)
	})
	got := pv.packets(webrtc.RTPCodecTypeVideo)
	for i := range sent {
		w, g := &sent[i], got[i]
		if g.SequenceNumber != w.SequenceNumber || g.Timestamp != w.Timestamp || g.Marker != w.Marker ||
			g.SSRC != v.VideoSSRC() || g.PayloadType != vc.Video.PayloadType || !bytes.Equal(g.Payload, w.Payload) {
			t.Fatalf("video packet %d: got %s, want %s", i, describe(g), describe(w))
		}
	}
	t.Logf("%d video packets arrived in order and intact; %d GSO messages in %d sendmmsg calls",
		len(sent), srv.Stats().Messages, srv.Stats().Syscalls)

	// Audio: one Opus packet per frame, on its own SSRC.
	var audioSent []rtp.Packet
	for i := range 50 {
		p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: vc.Audio.PayloadType, SequenceNumber: uint16(100 + i),
			Timestamp: uint32(960 * i), SSRC: v.AudioSSRC()}, Payload: fill(0x78, 80+i, i)}
		audioSent = append(audioSent, p)
		if err := snd.SendFrame(v, audioSent[i:]); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "every audio packet", func() bool {
		return pv.count(webrtc.RTPCodecTypeAudio) >= len(audioSent)
	})
	for i, g := range pv.packets(webrtc.RTPCodecTypeAudio) {
		if g.SequenceNumber != audioSent[i].SequenceNumber || !bytes.Equal(g.Payload, audioSent[i].Payload) {
			t.Fatalf("audio packet %d: got %s, want %s", i, describe(g), describe(&audioSent[i]))
		}
	}

	testkit.WaitFor(t, 10*time.Second, "a receiver report about the video SSRC", func() bool {
		return rl.reports(v.VideoSSRC()) > 0
	})

	// A packet lost on the way: the viewer asks for it, gets it again.
	stamped := sendAU(aus[5], 2)
	lost := stamped[2]
	lost.Payload = slices.Clone(lost.Payload)
	sendAU(aus[6], -1)
	testkit.WaitFor(t, 10*time.Second, "a NACK for the dropped packet", func() bool {
		return rl.nacked(v.VideoSSRC(), lost.SequenceNumber)
	})
	before := pv.count(webrtc.RTPCodecTypeVideo)
	if err := snd.SendFrame(v, []rtp.Packet{lost}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the retransmitted packet", func() bool {
		// Looked for among all that arrived since, not only the next
		// one: under load the last of aus[6]'s packets may still have
		// been on their way when before was read.
		got := pv.packets(webrtc.RTPCodecTypeVideo)
		for _, p := range got[min(before, len(got)):] {
			if p.SequenceNumber == lost.SequenceNumber && bytes.Equal(p.Payload, lost.Payload) {
				return true
			}
		}
		return false
	})

	// Consent: pion checks every 2 s; the session must hold well past
	// ten seconds while media keeps flowing.
	answered := srv.Stats().STUNAnswered
	for i := 0; time.Since(connectedAt) < 12*time.Second; i++ {
		sendAU(aus[7+i%50], -1)
		select {
		case <-v.Done():
			t.Fatalf("viewer ended during the consent period: %v", v.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if hist := pv.stateHistory(); hist[len(hist)-1] != webrtc.PeerConnectionStateConnected || slices.Contains(hist, webrtc.PeerConnectionStateDisconnected) {
		t.Fatalf("pion viewer's states over %v: %v", time.Since(connectedAt).Round(time.Second), hist)
	}
	if n := srv.Stats().STUNAnswered - answered; n < 3 {
		t.Errorf("%d consent checks answered over the last seconds, want several", n)
	}
	t.Logf("after %v: %+v; RTCP kinds %v", time.Since(connectedAt).Round(time.Second), srv.Stats(), rl.kindCounts())

	if err := v.WriteRTCP([]rtcp.Packet{&rtcp.SenderReport{SSRC: v.VideoSSRC(), NTPTime: 1 << 32, RTPTime: 5}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a sender report at the viewer", func() bool {
		pv.mu.Lock()
		defer pv.mu.Unlock()
		return pv.rtcpTypes["*rtcp.SenderReport"] > 0
	})
	closedAt := time.Now()
	v.Close()
	testkit.WaitFor(t, 3*time.Second, "the pion viewer to leave connected", func() bool {
		return pv.pc.ConnectionState() != webrtc.PeerConnectionStateConnected
	})
	t.Logf("pion viewer went %v %v after Close", pv.pc.ConnectionState(), time.Since(closedAt).Round(time.Millisecond))
	// The BYE goes out just before the close_notify; pion may close the
	// receivers (on another goroutine) before its RTCP reader got to the
	// BYE, so it is only reported here. TestRawPeer asserts it.
	t.Logf("RTCP BYE seen by pion for video %v, audio %v", pv.gotBye(v.VideoSSRC()), pv.gotBye(v.AudioSSRC()))
	if v.Err() != plane.ErrClosed {
		t.Errorf("Err() = %v, want plane.ErrClosed", v.Err())
	}
	if err := snd.SendFrame(v, sent[:1]); err != plane.ErrClosed && err != ErrNotConnected {
		t.Errorf("sending to a closed viewer: %v", err)
	}
}

// TestViewerLeaves: a viewer that closes its PeerConnection sends a DTLS
// close_notify, which ends its session at once instead of after the
// consent timeout.
func TestViewerLeaves(t *testing.T) {
	srv, _ := newServer(t, nil)
	pv := newPionViewer(t, false)
	v, _ := joinPion(t, srv, pv, codecsFor(t, pv.offer))
	if err := pv.pc.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-v.Done():
		if v.Err() != plane.ErrPeerClosed {
			t.Errorf("Err() = %v, want plane.ErrPeerClosed", v.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("viewer still alive 5 s after its PeerConnection closed")
	}
	assertForgotten(t, srv, v)
}
