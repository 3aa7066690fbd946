package hostile

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestICETCPFlood opens many ICE-TCP connections from several source
// addresses for a few seconds, half of them sending RFC 4571 frames of
// garbage and half idle: the media plane keeps each source to
// webrtc.maxTCPPerClient (8) and closes the rest at accept, counting and
// logging them once a second per source; the bystander keeps its frame
// rate and a new viewer that may only use ICE-TCP still connects and
// plays. It states the connections accepted and refused, and the RSS.
func TestICETCPFlood(t *testing.T) {
	t.Parallel()
	port := freeTCPPort(t)
	cfg := strings.Replace(testkit.LoopbackConfig(""), "  tcpPort: 0\n", fmt.Sprintf("  tcpPort: %d\n", port), 1)
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), cfg)
	if srv.Addrs.WebRTCTCP == "" {
		t.Fatal("ICE-TCP is not listening")
	}
	b := startBystander(t, srv)
	rssBefore := rss(t, srv)
	linesBefore := len(srv.Log.Lines())

	const sources, dialsPerSource, perClient = 6, 40, 8
	const seconds = 3
	var mu sync.Mutex
	var open []net.Conn
	var dialed, closedAtOnce int
	var wg sync.WaitGroup
	for i := range sources {
		wg.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: source(i)}, Timeout: 5 * time.Second}
			for range dialsPerSource {
				c, err := d.Dial("tcp4", srv.Addrs.WebRTCTCP)
				// A refused connection's reset may come before connect
				// returns.
				if err != nil && !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("dial from %v: %v", source(i), err)
					return
				}
				shut := err != nil || closedByServer(c, 50*time.Millisecond)
				mu.Lock()
				dialed++
				if shut {
					closedAtOnce++
				}
				if err == nil {
					open = append(open, c)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	// Garbage from the odd sources' connections for a few seconds: frames
	// of random bytes, each a datagram the server must classify and drop.
	stop := time.Now().Add(seconds * time.Second)
	var garbage int
	for time.Now().Before(stop) {
		for i, c := range open {
			if i%2 == 1 {
				continue
			}
			frame := make([]byte, 2+200)
			binary.BigEndian.PutUint16(frame, 200)
			_, _ = rand.Read(frame[2:])
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := c.Write(frame); err == nil {
				garbage++
			}
		}
		time.Sleep(50 * time.Millisecond) // pacing the garbage, not a wait for a state
	}

	// A new viewer that may only use ICE-TCP, from 127.0.0.1, during the
	// flood's aftermath: its connections are its own client's.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	viewer, err := whepclient.Dial(ctx, srv.URL("/"+bystanderPath+"/whep"), whepclient.Options{
		Decode: true,
		SettingEngine: func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeTCP4})
		},
	})
	if err != nil {
		t.Fatalf("a new ICE-TCP viewer could not connect after the flood: %v", err)
	}
	t.Cleanup(func() { _ = viewer.Close() })
	testkit.WaitFor(t, 15*time.Second, "the new ICE-TCP viewer's first IDR", func() bool { return viewer.Stats().IDRs > 0 })

	rssAfter := rss(t, srv)
	lines := len(srv.Log.Lines()) - linesBefore
	refusedLines := len(srv.Log.Lines("ICE-TCP connection refused: too many from this client"))
	perClientRefused := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_webrtc_ice_tcp_refused_total", "reason", "per_client")
	evicted := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_webrtc_ice_tcp_evicted_total")
	t.Logf("ICE-TCP flood from %s: %d connections dialed, %d closed at once by the server (metric per_client refused %.0f, evicted %.0f), %d garbage frames; RSS %.1f MB → %.1f MB; %d log lines (%d per-client refusal lines)",
		describeSources(sources), dialed, closedAtOnce, perClientRefused, evicted, garbage,
		float64(rssBefore)/1e6, float64(rssAfter)/1e6, lines, refusedLines)
	// The clients' own count can only miss a close slower than its short
	// read, so it is stated, not asserted.
	if want := sources * (dialsPerSource - perClient); int(perClientRefused) != want {
		t.Errorf("refused %.0f connections over the per-client cap, want %d", perClientRefused, want)
	}
	// One line a second per source at most, while the dials lasted.
	if refusedLines == 0 || refusedLines > sources*(2+seconds) {
		t.Errorf("%d per-client refusal lines for %d sources, want one a second per source at most", refusedLines, sources)
	}
	if growth := rssAfter - rssBefore; growth > 64<<20 {
		t.Errorf("RSS grew by %.1f MB, want under 64 MB", float64(growth)/1e6)
	}
	b.Check(t)
}

// freeTCPPort is a loopback TCP port that was free a moment ago: the
// server's config needs a number, and ICE-TCP's 0 means off.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// closedByServer reports whether the server closed c within d: a read
// ends in EOF or a reset instead of the deadline.
func closedByServer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	_ = c.SetReadDeadline(time.Time{})
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
