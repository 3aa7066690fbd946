package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// A viewer's bandwidth estimate from its transport-cc feedback, end to
// end: a pion viewer running pion's feedback generator, the estimate as
// the control API shows it.

// estimateOf reads session id's bandwidth estimate from the control API;
// nil while it has none.
func estimateOf(t *testing.T, ts *testServer, id string) *api.Bandwidth {
	t.Helper()
	resp, err := http.Get(ts.apiURL("/v1/sessions"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Sessions []api.Session }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, s := range body.Sessions {
		if s.ID == id {
			return s.Bandwidth
		}
	}
	t.Fatalf("session %s not in GET /v1/sessions", id)
	return nil
}

// waitEstimate waits until id's estimate satisfies ok, logging the
// estimates it saw.
func waitEstimate(t *testing.T, ts *testServer, id, what string, timeout time.Duration, ok func(b *api.Bandwidth) bool) *api.Bandwidth {
	t.Helper()
	var last *api.Bandwidth
	start := time.Now()
	testkit.WaitFor(t, timeout, what, func() bool {
		b := estimateOf(t, ts, id)
		if b != nil && (last == nil || *b != *last) {
			t.Logf("%5.1f s: %+v", time.Since(start).Seconds(), *b)
		}
		last = b
		return b != nil && ok(b)
	})
	return last
}

// TestEstimateLoopback: on loopback a 2.5 Mbit/s stream gets through
// whole, and the estimate says so: from transport-cc, at least what was
// sent and at most the 1.5 times of it GCC allows without probing. A
// viewer without transport-cc gets an estimate from its receiver reports.
func TestEstimateLoopback(t *testing.T) {
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	tcc := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) { o.TransportCC, o.NACK, o.ReceiverReports = true, true, true })
	rr := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) { o.NACK, o.ReceiverReports = true, true })
	if _, answer := tcc.SDP(); !strings.Contains(answer, "a=rtcp-fb:102 transport-cc") {
		t.Fatalf("answer to a transport-cc offer lacks transport-cc feedback:\n%s", answer)
	}
	if _, answer := rr.SDP(); strings.Contains(answer, "transport-wide-cc") {
		t.Fatalf("answer to an offer without transport-cc carries its extension:\n%s", answer)
	}
	b := waitEstimate(t, ts, sessionID(tcc), "a transport-cc estimate near the stream's rate", 20*time.Second, func(b *api.Bandwidth) bool {
		return b.Source == "transport-cc" && b.Bitrate >= 2_000_000
	})
	if b.Bitrate > 6_000_000 {
		t.Errorf("estimate %d bit/s: more than 1.5 times what a 2.5 Mbit/s stream shows", b.Bitrate)
	}
	waitEstimate(t, ts, sessionID(rr), "a receiver-report estimate near the stream's rate", 20*time.Second, func(b *api.Bandwidth) bool {
		return b.Source == "receiver-reports" && b.Bitrate >= 1_500_000
	})
}

// TestEstimateShaped: behind a 1 Mbit/s link (tc tbf in a network
// namespace, the viewer's side of a relay) the transport-cc estimate of
// a viewer of a 2.5 Mbit/s stream falls below 1.2 Mbit/s within a few
// seconds of media.
//
// Not parallel: the link's rate is what it measures, and a loaded machine
// delays the relay.
func TestEstimateShaped(t *testing.T) {
	requireNetns(t, "tc")
	// Without renditions, so the stream keeps overfilling the link (a
	// viewer would otherwise be moved to a rendition that fits it).
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Renditions = config.Renditions{Off: true} })
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")

	// The viewer and the relay's end facing it share the namespace's
	// loopback, shaped by tbf: every datagram the server sends the viewer
	// crosses it (and so do the viewer's few RTCP packets).
	vNS := newNetns(t, "viewer")
	vNS.exec(t, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1mbit", "burst", "32kb", "latency", "200ms")
	mediaPort := addrPort(t, ts.addrs.Load().WebRTCUDP)
	relayIn := listenUDPIn(t, vNS)
	rec := newTraceRecorder(t)
	udpLink(t, relayIn, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: mediaPort}, linkOpts{sent: rec.sent})
	sock := listenUDPIn(t, vNS)
	mux := webrtc.NewICEUDPMux(nil, rec.wrap(sock))
	t.Cleanup(func() { mux.Close() })
	v := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) {
		o.TransportCC, o.NACK, o.ReceiverReports = true, true, true
		o.RewriteAnswer = candidatePort("udp", mediaPort, relayIn.LocalAddr().(*net.UDPAddr).Port)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetICEUDPMux(mux)
		}
	})
	start := time.Now()
	b := waitEstimate(t, ts, sessionID(v), "the estimate below 1.2 Mbit/s", 15*time.Second, func(b *api.Bandwidth) bool {
		return b.Source == "transport-cc" && b.Bitrate < 1_200_000
	})
	t.Logf("below 1.2 Mbit/s %v after the viewer connected: %+v", time.Since(start).Round(100*time.Millisecond), *b)
	// And it stays near what the link carries while the stream goes on
	// overfilling it: neither back up nor falling through the floor.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if b := estimateOf(t, ts, sessionID(v)); b == nil || b.Bitrate < 300_000 || b.Bitrate > 1_300_000 {
			t.Fatalf("estimate %+v behind the 1 Mbit/s link, want within [0.3, 1.3] Mbit/s", b)
		}
		time.Sleep(250 * time.Millisecond) // a sampling interval, not a wait for an event
	}
}

// traceRecorder writes, when SRTWHEP_RECORD_TRACE names a file, what the
// estimator's tests replay (pkg/bwe/testdata): each packet the server
// sent with its transport-wide number, as the relay took it ("s
// MICROSECONDS NUMBER BYTES"), and each one the viewer's socket read
// ("r MICROSECONDS NUMBER"). SRTP leaves the RTP header and its
// extensions in clear. Without the variable it records nothing.
type traceRecorder struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
}

func newTraceRecorder(t *testing.T) *traceRecorder {
	r := &traceRecorder{start: time.Now()}
	path := os.Getenv("SRTWHEP_RECORD_TRACE")
	if path == "" {
		return r
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r.w = bufio.NewWriter(f)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := errors.Join(r.w.Flush(), f.Close()); err != nil {
			t.Error(err)
		}
		r.w = nil
	})
	return r
}

// tccNumber is the transport-wide number of an RTP datagram; false for
// anything else.
func tccNumber(b []byte) (uint16, bool) {
	if len(b) < 12 || b[0] < 128 || b[0] > 191 || b[1] >= 192 && b[1] <= 223 {
		return 0, false
	}
	var h rtp.Header
	if _, err := h.Unmarshal(b); err != nil || !h.Extension {
		return 0, false
	}
	for _, id := range h.GetExtensionIDs() {
		if e := h.GetExtension(id); len(e) == 2 {
			return binary.BigEndian.Uint16(e), true
		}
	}
	return 0, false
}

func (r *traceRecorder) line(kind string, b []byte) {
	us := time.Since(r.start).Microseconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return
	}
	n, ok := tccNumber(b)
	if !ok {
		return
	}
	if kind == "s" {
		fmt.Fprintf(r.w, "s %d %d %d\n", us, n, len(b))
	} else {
		fmt.Fprintf(r.w, "r %d %d\n", us, n)
	}
}

func (r *traceRecorder) sent(b []byte) { r.line("s", b) }

// wrap records what the viewer's socket reads.
func (r *traceRecorder) wrap(c net.PacketConn) net.PacketConn { return &recordingConn{c, r} }

type recordingConn struct {
	net.PacketConn
	r *traceRecorder
}

func (c *recordingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.r.line("r", b[:n])
	}
	return n, addr, err
}
