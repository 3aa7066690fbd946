package hostile

import (
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestSRTHandshakeFlood sends real libsrt handshakes that pass the listen
// callback and then fail (a passphrase the path does not have), about 100
// a second: after each round the server's RSS must come back to within
// 64 MB of where it started (main kept +107 MB after 3 s, for good), the
// flood writes a few log lines, a real publisher connects during it and
// the bystander keeps its frame rate. HOSTILE_SRTFLOOD=SECONDS (make
// bench: 30, three rounds) makes it long.
func TestSRTHandshakeFlood(t *testing.T) {
	t.Parallel()
	seconds, rounds := 3, 1
	if v := os.Getenv("HOSTILE_SRTFLOOD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOSTILE_SRTFLOOD=%q: want seconds, e.g. 30", v)
		}
		seconds, rounds = n, 3
	}
	srv := startServer(t, "paths:\n  flood/locked:\n    passphrase: the-right-passphrase\n")
	b := startBystander(t, srv)
	addr, err := net.ResolveUDPAddr("udp", srv.Addrs.SRT)
	if err != nil {
		t.Fatal(err)
	}
	linesBefore := len(srv.Log.Lines())
	rssBefore := rss(t, srv)
	const perSecond, workers = 100, 20
	var refused, connected int
	var mu sync.Mutex
	for round := range rounds {
		if round == rounds-1 {
			// A real publisher gets in during the last round.
			go func() {
				time.Sleep(time.Second) // into the flood, not a wait for a state
				publishTestPattern(t, srv, "live/during")
			}()
		}
		start := time.Now()
		jobs := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range jobs {
					s, err := srtcall.Dial(addr, srtcall.Options{StreamID: "publish:flood/locked", Passphrase: "not-the-passphrase"})
					mu.Lock()
					if err != nil {
						refused++
					} else {
						connected++
						srtcall.Close(s)
					}
					mu.Unlock()
				}
			})
		}
		for i := range perSecond * seconds {
			if ahead := time.Duration(i)*time.Second/perSecond - time.Since(start); ahead > 0 {
				time.Sleep(ahead) // pacing to the rate, not a wait for a state
			}
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
		atEnd := rss(t, srv)
		// libsrt frees the failed sockets a second or two later and the
		// server trims the C heap then: wait for it, with a deadline.
		testkit.WaitFor(t, 15*time.Second, "the server's RSS to come back within 64 MB", func() bool {
			return rss(t, srv)-rssBefore < 64<<20
		})
		t.Logf("round %d: %d handshakes in %.1f s; server RSS %.1f MB at its end, %.1f MB once settled", round+1, perSecond*seconds,
			time.Since(start).Seconds(), float64(atEnd)/1e6, float64(rss(t, srv))/1e6)
	}
	srv.WaitLog(t, 15*time.Second, "path=live/during", "publisher connected")
	growth := rss(t, srv) - rssBefore
	lines := len(srv.Log.Lines()) - linesBefore
	t.Logf("SRT flood: %d handshakes with a wrong passphrase (%d refused, %d connected); RSS %.1f MB → +%.1f MB; %d log lines",
		refused+connected, refused, connected, float64(rssBefore)/1e6, float64(growth)/1e6, lines)
	if n := len(srv.Log.Lines("overload (1402)")); n > 0 {
		t.Errorf("%d overload lines: the handshake records filled up, so real publishers would be refused", n)
	}
	if connected > 0 {
		t.Errorf("%d callers with a wrong passphrase connected", connected)
	}
	if growth > 64<<20 {
		t.Errorf("RSS grew by %.1f MB, want under 64 MB", float64(growth)/1e6)
	}
	if max := 3 * seconds * rounds; lines > max+20 {
		t.Errorf("%d log lines for the flood, want at most a few a second (%d)", lines, max)
	}
	b.Check(t)
}
