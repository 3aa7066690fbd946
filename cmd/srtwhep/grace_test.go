package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestPublisherGraceEnds: with no publisher for publisherGrace, the viewers
// are closed, and each sees its PeerConnection leave "connected" within a
// second of the server ending it (RTCP BYE and DTLS close_notify, not an
// ICE timeout).
//
// Not parallel: it bounds how soon the viewer sees the end (1 s), which a
// loaded machine stretches.
func TestPublisherGraceEnds(t *testing.T) {
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.PublisherGrace = config.Duration(3 * time.Second) })
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/other"))
	pub := startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/other")
	ts.waitPublisher(t, "live/cam1")
	bystander := dialViewer(t, ts, "live/other")
	// The viewer's media goes through a relay that watches the goodbye on
	// the wire: pion closes the whole PeerConnection from the DTLS
	// goroutine that reads close_notify while the BYE just before it may
	// still wait in the SRTCP goroutine's buffer, so whether pion shows
	// the BYE is a race in pion, not a fact about the server.
	var (
		wireMu  sync.Mutex
		goodbye []string // "bye SSRC" and "close_notify", in the order sent
	)
	relayIn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	mediaPort := addrPort(t, ts.addrs.Load().WebRTCUDP)
	udpLink(t, relayIn, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: mediaPort}, linkOpts{sent: func(pkt []byte) {
		var what string
		switch {
		// An SRTCP packet's first header and SSRC (here the BYE's first
		// source) are sent in the clear (RFC 3711 §3.4).
		case len(pkt) >= 8 && pkt[0]>>6 == 2 && pkt[1] == 203:
			what = fmt.Sprintf("bye %d", binary.BigEndian.Uint32(pkt[4:8]))
		case len(pkt) >= 1 && pkt[0] == 21: // a DTLS alert: the only one sent is close_notify
			what = "close_notify"
		default:
			return
		}
		wireMu.Lock()
		goodbye = append(goodbye, what)
		wireMu.Unlock()
	}})
	v := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) {
		o.SenderReports = true
		o.RewriteAnswer = candidatePort("udp", mediaPort, relayIn.LocalAddr().(*net.UDPAddr).Port)
	})
	v.waitUnits(t, 30, 20*time.Second)
	sr, ok := v.SenderReport(webrtc.RTPCodecTypeVideo)
	if !ok {
		testkit.WaitFor(t, 5*time.Second, "the video track's first sender report", func() bool {
			sr, ok = v.SenderReport(webrtc.RTPCodecTypeVideo)
			return ok
		})
	}

	if err := pub.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill ffmpeg: %v", err)
	}
	ts.logs.WaitLog(t, 10*time.Second, "keeping its viewers", "path=live/cam1")
	heldAt := time.Now()

	ended := make(chan time.Time, 1)
	go func() {
		ts.logs.WaitLog(t, 15*time.Second, "no publisher within the grace period", "path=live/cam1")
		ended <- time.Now()
	}()
	var endedAt time.Time
	select {
	case endedAt = <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the held viewers were not ended")
	}
	if held := endedAt.Sub(heldAt); held < 2500*time.Millisecond {
		t.Errorf("viewers ended %v after the publisher left, want publisherGrace (3 s)", held)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	select {
	case <-v.Done():
		if d := time.Since(endedAt); d > time.Second {
			t.Errorf("viewer left \"connected\" %v after the server ended its session, want ≤ 1 s", d)
		}
		wireMu.Lock()
		sent := slices.Clone(goodbye)
		wireMu.Unlock()
		t.Logf("viewer ended %v after the server did: %v; on the wire: %q; pion saw the BYE: %v", time.Since(endedAt).Round(time.Millisecond),
			v.Err(), sent, v.Goodbye(webrtc.RTPCodecTypeVideo))
		if want := []string{fmt.Sprintf("bye %d", sr.SSRC), "close_notify"}; !slices.Equal(sent, want) {
			t.Errorf("the server's goodbye on the wire: %q, want %q (an RTCP BYE for the video track, then DTLS close_notify)", sent, want)
		}
	case <-ctx.Done():
		t.Fatal("viewer still connected 5 s after the server ended its session")
	}
	checkNotTarget(t, "viewer of live/other", bystander)
	if _, err := whepclient.Dial(t.Context(), ts.httpURL("/live/cam1/whep"), whepclient.Options{SettingEngine: testkit.LoopbackOnly}); err == nil {
		t.Error("a viewer joined a path with no publisher after the grace period")
	}
}
