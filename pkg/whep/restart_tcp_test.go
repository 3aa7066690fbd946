package whep

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// TestICERestartToTCP is a browser whose UDP gets blocked mid-session: a
// viewer connected over UDP, whose writer the own plane's pool steps,
// restarts ICE and is left with only the server's ICE-TCP candidate. ICE
// connects again over TCP, the writer leaves the pool for a goroutine of
// its own (TCP writes block), media keeps flowing, and DELETE ends the
// session cleanly, the media plane closing the viewer over TCP.
func TestICERestartToTCP(t *testing.T) {
	// Registered first so it runs last, once the server has stopped.
	var logs testkit.LogBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	clip := makeClip(t, 30, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServerNet(t, src, func(c *plane.Config) { c.TCPListen = "127.0.0.1:0" }, func(c *Config) {
		c.Logger = logs.Logger(slog.LevelInfo)
	})
	feed(t, p, clip)

	v := newDualStackViewer(t)
	pc := v.pc
	resp, answer := post(t, hs.URL+"/live/cam1/whep", "application/sdp", v.offer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %q", resp.StatusCode, answer)
	}
	loc, etag := resp.Header.Get("Location"), resp.Header.Get("ETag")
	url, id := hs.URL+loc, loc[strings.LastIndex(loc, "/")+1:]
	if protos := candidateProtocols(answer); protos["udp"] == 0 || protos["tcp"] == 0 {
		t.Fatalf("answer without UDP and ICE-TCP candidates (%v):\n%s", protos, answer)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	wait(v.iceConnected, "ICE connected")
	wait(v.trackSeen, "the video track")
	testkit.WaitFor(t, 20*time.Second, "50 packets over UDP", func() bool { return v.packets.Load() > 50 })

	// UDP wins by priority, and a UDP viewer's writer is the pool's.
	if proto := selectedProtocol(t, pc); proto != webrtc.ICEProtocolUDP {
		t.Fatalf("the viewer first connected over %s, want UDP", proto)
	}
	sess := srv.lookupSession(id)
	if sess == nil {
		t.Fatalf("no session %s", id)
	}
	if n := writerGoroutines(); n != 0 {
		t.Fatalf("%d writers on goroutines of their own for a UDP viewer, want 0 (stepped by the pool)", n)
	}

	// The ICE restart, as TestICERestart does it. A state flap before it
	// must not pass for the reconnection.
	for len(v.iceConnected) > 0 {
		<-v.iceConnected
	}
	restart, err := pc.CreateOffer(&webrtc.OfferOptions{ICERestart: true})
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(restart); err != nil {
		t.Fatal(err)
	}
	wait(gathered, "the restart's candidates")
	mine := offerICE(t, pc.LocalDescription().SDP)
	resp, frag := do(t, http.MethodPatch, url, "application/trickle-ice-sdpfrag", mine.Video(102, "0"),
		map[string]string{"If-Match": etag})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("restart PATCH: %d %q", resp.StatusCode, frag)
	}
	theirs, err := sdpoffer.ParseFrag(frag)
	if err != nil || theirs.Ufrag == "" || theirs.Pwd == "" {
		t.Fatalf("restart answer fragment %q: %+v %v", frag, theirs, err)
	}
	// UDP is blocked now: of the server's new candidates only ICE-TCP's
	// reach the viewer.
	var tcp []string
	for _, c := range theirs.Candidates {
		if f := strings.Fields(c); len(f) > 2 && strings.EqualFold(f[2], "tcp") {
			tcp = append(tcp, c)
		}
	}
	if len(tcp) == 0 || len(tcp) == len(theirs.Candidates) {
		t.Fatalf("restart answer has %d ICE-TCP candidates of %d, want some of each protocol:\n%s", len(tcp), len(theirs.Candidates), frag)
	}
	// pion dropped its UDP path when it restarted ICE (CreateOffer), so
	// what arrives from here on came over TCP.
	before := v.packets.Load()
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: restartedAnswer(answer, theirs.Ufrag, theirs.Pwd, tcp)}); err != nil {
		t.Fatal(err)
	}
	wait(v.iceConnected, "ICE connected again")
	testkit.WaitFor(t, 20*time.Second, "the viewer's selected pair to be ICE-TCP", func() bool {
		return selectedProtocol(t, pc) == webrtc.ICEProtocolTCP
	})
	testkit.WaitFor(t, 30*time.Second, "100 more packets over ICE-TCP", func() bool { return v.packets.Load() > before+100 })
	testkit.WaitFor(t, 20*time.Second, "the writer to leave the pool for a goroutine of its own", func() bool {
		return writerGoroutines() == 1
	})
	if infos := srv.Sessions(); len(infos) != 1 || infos[0].State != "connected" {
		t.Fatalf("Sessions() = %+v, want the one connected session", infos)
	}
	sent, _ := sess.sent()
	testkit.WaitFor(t, 20*time.Second, "the writer's goroutine to send 50 more packets", func() bool {
		n, _ := sess.sent()
		return n > sent+50
	})

	resp, msg := do(t, http.MethodDelete, url, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d %q, want 200", resp.StatusCode, msg)
	}
	if n := len(srv.Sessions()); n != 0 {
		t.Errorf("%d sessions listed after DELETE, want 0", n)
	}
	testkit.WaitFor(t, 20*time.Second, "the deleted session to end", func() bool {
		return srv.Stats().Sessions == 0 && p.readerCount() == 0 && writerGoroutines() == 0
	})
	closed := logs.WaitLog(t, 20*time.Second, "viewer closed", "session="+id, "duration=")
	if !strings.Contains(closed, `reason="deleted by the client"`) {
		t.Errorf("the session ended for another reason: %s", closed)
	}

	// The media plane's own view, in its log: connected over UDP once,
	// closed over TCP.
	connected := logs.Lines("viewer connected", "session="+id)
	if len(connected) != 1 || strings.HasPrefix(lastAttr(connected[0], "media_remote"), "tcp:") {
		t.Errorf("want one \"viewer connected\" over UDP, got %q", connected)
	}
	moved := logs.Lines("viewer route changed", "session="+id, "media_remote=tcp:")
	if len(moved) != 1 || strings.HasPrefix(lastAttr(moved[0], "was"), "tcp:") {
		t.Errorf("want one \"viewer route changed\" from UDP to ICE-TCP, got %q", moved)
	}
	gone := logs.WaitLog(t, 20*time.Second, "viewer closed", "session="+id, "media_remote=tcp:")
	restarted := logs.Lines("ICE restart", "session="+id)
	if len(restarted) != 1 {
		t.Errorf("%d \"ICE restart\" lines, want 1", len(restarted))
	}
	t.Logf("server log:\n%s\n%s\n%s\n%s\n%s\n(%d packets resent on NACKs)", connected, restarted, moved, gone, closed, sess.snd.Load().Retransmitted())
}

// dualStackViewer is a pion viewer that, like a browser, may use UDP and
// ICE-TCP; it counts the video packets it receives.
type dualStackViewer struct {
	pc           *webrtc.PeerConnection
	offer        string
	packets      atomic.Uint64
	trackSeen    chan struct{}
	iceConnected chan struct{}
}

func newDualStackViewer(t *testing.T) *dualStackViewer {
	t.Helper()
	// NACKs and receiver reports, as a browser sends them: the RTCP path
	// changes with the media's.
	off := testkit.Offer(t, testkit.OfferOptions{
		Codecs:       []webrtc.RTPCodecParameters{h264Codec(102, "42e01f", 1)},
		NetworkTypes: []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeTCP4},
		Feedback:     true,
	})
	pc := off.PC
	v := &dualStackViewer{pc: pc, trackSeen: make(chan struct{}), iceConnected: make(chan struct{}, 4)}
	rtpDone := make(chan struct{})
	t.Cleanup(func() {
		// GracefulClose waits for pion's goroutines; the read loops end
		// with the connection.
		_ = pc.GracefulClose()
		select {
		case <-v.trackSeen:
			<-rtpDone
		default:
		}
	})
	pc.OnICEConnectionStateChange(func(st webrtc.ICEConnectionState) {
		if st == webrtc.ICEConnectionStateConnected {
			select {
			case v.iceConnected <- struct{}{}:
			default: // one waiting is enough; pion's callback must not block
			}
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		close(v.trackSeen)
		defer close(rtpDone)
		for {
			if _, _, err := tr.ReadRTP(); err != nil {
				return
			}
			v.packets.Add(1)
		}
	})
	v.offer = off.SDP
	return v
}

// selectedProtocol is the protocol of the viewer's selected candidate
// pair, ICEProtocolUnknown while there is none.
func selectedProtocol(t *testing.T, pc *webrtc.PeerConnection) webrtc.ICEProtocol {
	t.Helper()
	pair, err := pc.GetReceivers()[0].Transport().ICETransport().GetSelectedCandidatePair()
	if err != nil {
		t.Fatalf("selected candidate pair: %v", err)
	}
	if pair == nil {
		return webrtc.ICEProtocolUnknown // none (yet)
	}
	if pair.Local.Protocol != pair.Remote.Protocol {
		t.Fatalf("selected pair %s mixes protocols", pair)
	}
	return pair.Local.Protocol
}

// candidateProtocols counts an SDP's candidates by transport protocol.
func candidateProtocols(sdp string) map[string]int {
	n := map[string]int{}
	for _, l := range strings.Split(sdp, "\r\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "a=candidate:") && len(f) > 2 {
			n[strings.ToLower(f[2])]++
		}
	}
	return n
}

// writerGoroutines counts the session writers running on goroutines of
// their own (writer.run); the pool's stepped writers have none.
func writerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("pkg/plane.Run("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// lastAttr is the last value of key in a text-handler log line.
func lastAttr(line, key string) string {
	i := strings.LastIndex(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(line[i+len(key)+2:], " ")
	return v
}
