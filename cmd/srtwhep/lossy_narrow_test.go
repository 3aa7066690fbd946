package main

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// Viewers on links narrower than the stream, over ICE-TCP and over UDP:
// each drops to the next IDR, and only it does.

// TestNarrowViewer: a viewer on a 1 Mbit/s link (ICE-TCP through a capped
// relay) cannot take a 2.5 Mbit/s stream. Its writer blocks, its queue
// fills, and it drops to the next IDR ("reader is too slow") while the
// viewers beside it keep every frame.
//
// Not parallel: the capped relay runs in this process and the viewers
// beside it must keep every frame of 720p, which other tests' load can
// cost them.
func TestNarrowViewer(t *testing.T) {
	// A short queue overflows soon after the writer blocks. Without
	// renditions: this is what a viewer gets when none fits its link
	// (TestRenditionProbe moves it to one).
	ts := startServer(t, func(c *config.Config) {
		c.Readers.QueueSize = 20
		c.PathDefaults.Renditions = config.Renditions{Off: true}
	},
		func(_ *whep.Config, c *plane.Config) { c.TCPListen = "127.0.0.1:0" })
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	others := []*viewer{dialViewer(t, ts, "live/cam1"), dialViewer(t, ts, "live/cam1")}

	tcpAddr := ts.addrs.Load().WebRTCTCP
	if tcpAddr == "" {
		t.Fatal("ICE-TCP is not listening")
	}
	relay := tcpCapLink(t, tcpAddr, 1_000_000)
	narrow := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) {
		o.RewriteAnswer = candidatePort("tcp", addrPort(t, tcpAddr), relay)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeTCP4})
		}
	})
	id := sessionID(narrow)
	ts.logs.WaitLog(t, 30*time.Second, "reader is too slow, discarding", "session="+id)
	// The frames queued in the link before the drop still arrive first;
	// then the viewer must show the skip and play on past it. RTP
	// timestamps cannot show it (frames sent behind the live edge are
	// stamped as catch-up), H.264 frame_num can: it counts every picture.
	var skips []int
	testkit.WaitFor(t, 30*time.Second, "the narrow viewer to play on after a skip", func() bool {
		var err error
		skips, err = frameNumSkips(narrow.units())
		if err != nil {
			t.Fatal(err)
		}
		return len(skips) > 0 && narrow.count()-skips[len(skips)-1] >= 10
	})
	aus := narrow.units()
	for _, i := range skips {
		if !aus[i].IDR {
			t.Errorf("narrow viewer resumed at a non-IDR picture (access unit %d)", i)
		}
	}
	if st := narrow.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("narrow viewer: %d sequence gaps, %d broken pictures; want 0: it must lose whole frames, never packets",
			st.SeqGaps, st.BrokenAUs)
	}
	t.Logf("narrow viewer: %d pictures, skips to an IDR at %v", len(aus), skips)
	for _, l := range ts.logs.Lines("reader is too slow") {
		if !strings.Contains(l, "session="+id) {
			t.Errorf("a viewer on a good link dropped frames: %s", l)
		}
	}
	for i, v := range others {
		checkFullRate(t, fmt.Sprintf("direct viewer %d", i+1), v)
	}
}

// TestNarrowUDPViewer: a viewer whose UDP link carries 1 Mbit/s of a
// 2.5 Mbit/s stream. Over UDP the server's writes never block, so its
// queue never fills; the loss shows in its RTCP receiver reports instead,
// and the server drops its video to the next IDR ("reader is too slow")
// as it does for a full queue, while the viewers beside it keep every
// frame.
//
// Not parallel: like TestNarrowViewer.
func TestNarrowUDPViewer(t *testing.T) {
	requireNetns(t)
	// Without renditions, as TestNarrowViewer.
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Renditions = config.Renditions{Off: true} })
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	others := []*viewer{dialViewer(t, ts, "live/cam1"), dialViewer(t, ts, "live/cam1")}

	// The server's skips, seen where it sends: sequence numbers stay
	// contiguous across a skip while the timestamp jumps by the frames
	// dropped; the picture after the jump is where the viewer resumes.
	var (
		mu       sync.Mutex
		started  bool
		lastSeq  uint16
		lastTS   uint32
		landings = map[uint32]bool{}
	)
	narrow := dialNarrowUDPViewer(t, ts, "live/cam1", 1_000_000, func(p []byte) {
		seq, rtpTS, ok := rtpHeader(p)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !started:
			started = true
		case int16(seq-lastSeq) <= 0:
			return // a retransmission
		case seq == lastSeq+1 && rtpTS-lastTS > frameTicks*3/2 && rtpTS-lastTS < 1<<31:
			landings[rtpTS] = true
		}
		lastSeq, lastTS = seq, rtpTS
	})
	id := sessionID(narrow)
	ts.logs.WaitLog(t, 30*time.Second, "reader is too slow, discarding", "session="+id)
	t.Logf("%s", ts.logs.WaitLog(t, time.Second, "viewer's link loses too much", "session="+id))

	// The link still loses frames before each skip, so frame_num shows
	// skips of both kinds; those at the server's skips must be IDRs.
	resumed := func() (idr, other []int) {
		aus := narrow.units()
		mu.Lock()
		defer mu.Unlock()
		for i, au := range aus {
			if !landings[au.RTPTimestamp] {
				continue
			}
			if au.IDR {
				idr = append(idr, i)
			} else {
				other = append(other, i)
			}
		}
		return idr, other
	}
	// The viewer's client counts a picture whole only when no packet is
	// missing right before it, and the link often loses the last packets
	// before a skip: not every resumption can be checked, any one can.
	testkit.WaitFor(t, 45*time.Second, "two skips and the narrow viewer resuming whole at an IDR", func() bool {
		idr, _ := resumed()
		mu.Lock()
		n := len(landings)
		mu.Unlock()
		return n >= 2 && len(idr) >= 1
	})
	idr, other := resumed()
	for _, i := range other {
		t.Errorf("narrow viewer resumed at a non-IDR picture after a skip (access unit %d)", i)
	}
	skips, err := frameNumSkips(narrow.units())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("narrow viewer: %d whole pictures, %d frame_num skips, %d server skips, resumed at IDRs %v",
		narrow.count(), len(skips), len(landings), idr)
	mu.Unlock()

	var congested uint64
	for _, p := range ts.ingest.PathSamples() {
		if p.Path == "live/cam1" {
			congested = p.FramesDropped["congested"]
		}
	}
	if congested == 0 {
		t.Errorf("no frame counted as dropped for a congested viewer")
	}
	for _, l := range ts.logs.Lines("reader is too slow") {
		if !strings.Contains(l, "session="+id) {
			t.Errorf("a viewer on a good link dropped frames: %s", l)
		}
	}
	for i, v := range others {
		checkFullRate(t, fmt.Sprintf("direct viewer %d", i+1), v)
	}
}

// dialNarrowUDPViewer connects a browser-like viewer (NACKs, a receiver
// report every second) whose media path runs through a relay capped at bps;
// sent sees every datagram the server sent it, before the cap. The viewer's
// socket and the relay's client side live in their own namespace, so the
// server cannot reach the viewer around the relay.
func dialNarrowUDPViewer(t *testing.T, ts *testServer, path string, bps int, sent func([]byte)) *viewer {
	t.Helper()
	vNS := newNetns(t, "viewer")
	mediaPort := addrPort(t, ts.addrs.Load().WebRTCUDP)
	relayIn := listenUDPIn(t, vNS)
	udpLink(t, relayIn, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: mediaPort}, linkOpts{rate: bps, sent: sent})
	sock := listenUDPIn(t, vNS)
	mux := webrtc.NewICEUDPMux(nil, sock)
	t.Cleanup(func() { mux.Close() })
	return dialViewer(t, ts, path, func(o *whepclient.Options) {
		o.NACK = true
		o.ReceiverReports = true
		o.RewriteAnswer = candidatePort("udp", mediaPort, relayIn.LocalAddr().(*net.UDPAddr).Port)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetICEUDPMux(mux)
		}
	})
}
