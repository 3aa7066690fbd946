package hostile

import (
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// spoofWindow is how long the attack runs and the victim is measured.
const spoofWindow = 10 * time.Second

// TestSpoofedNomination: a viewer forges, from a third party's address
// (127.0.0.9), ICE checks with its own valid credentials and
// USE-CANDIDATE, aiming its stream there. The address never answers the
// server's consent check, so no media goes there: the victim receives the
// answers to the forged checks and a few checks of the server's, about as
// many bytes as the attacker sent, and no media. The bystander keeps its
// full frame rate, and the attacker's own session keeps playing.
func TestSpoofedNomination(t *testing.T) {
	srv := startServer(t, "")
	b := startBystander(t, srv)
	const path = "live/spoof"
	publishTestPattern(t, srv, path)
	att := dialViewer(t, srv, path, "attacking", whepclient.Options{Decode: true, ReceiverReports: true})
	offer, answer := att.SDP()
	check := forgedCheck(t, offer, answer)
	to := udpCandidate(t, answer)

	victim, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 9)})
	if err != nil {
		t.Fatal(err)
	}
	var got, media atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, err := victim.Read(buf)
			if err != nil {
				return
			}
			got.Add(int64(n))
			if n > 0 && buf[0] >= 20 {
				media.Add(1) // DTLS, RTP or RTCP: nothing the victim asked for
			}
		}
	}()
	t.Cleanup(func() { victim.Close(); <-done })

	before := att.Stats()
	var sent int64
	tick := time.NewTicker(100 * time.Millisecond) // a check every 100 ms: a few hundred bytes a second
	start := time.Now()
	for time.Since(start) < spoofWindow {
		raw := check()
		if _, err := victim.WriteToUDPAddrPort(raw, to); err != nil {
			t.Fatal(err)
		}
		sent += int64(len(raw))
		<-tick.C
	}
	tick.Stop()
	after := att.Stats()
	attFPS := float64(after.DecodedAUs-before.DecodedAUs) / time.Since(start).Seconds()
	t.Logf("spoofed nominations from 127.0.0.9 for %v: attacker sent %d bytes; victim received %d bytes, %d media datagrams (%.0f kbit/s); attacking viewer decoded %.1f fps meanwhile",
		spoofWindow, sent, got.Load(), media.Load(), float64(got.Load())*8/spoofWindow.Seconds()/1000, attFPS)
	if media.Load() != 0 {
		t.Errorf("%d media datagrams went to an address that never answered a consent check", media.Load())
	}
	// One answer per forged check, of about its size, and a few checks
	// per refused nomination.
	if max := 2*sent + 16<<10; got.Load() > max {
		t.Errorf("victim received %d bytes, over the bound %d", got.Load(), max)
	}
	b.Check(t)
	// The attacker's own session: still playing, or ended cleanly.
	select {
	case <-att.Done():
		t.Logf("attacking viewer's session ended: %v", att.Err())
	default:
		n := att.Stats().DecodedAUs
		testkit.WaitFor(t, 10*time.Second, "the attacking viewer to keep decoding", func() bool {
			return att.Stats().DecodedAUs >= n+30
		})
	}
}

// forgedCheck returns a function that builds the attacking viewer's ICE
// check, as its own agent would send it, nominating: valid
// MESSAGE-INTEGRITY (the server's password, from the answer) and
// FINGERPRINT, a fresh transaction ID each call.
func forgedCheck(t *testing.T, offer, answer string) func() []byte {
	t.Helper()
	c := testkit.NewICECheck(t, offer, answer)
	c.Controlling, c.Nominate = true, true
	return func() []byte { return c.Build(t).Raw }
}

// udpCandidate is the answer's first IPv4 UDP host candidate.
func udpCandidate(t *testing.T, answer string) netip.AddrPort {
	t.Helper()
	for line := range strings.Lines(answer) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "a=candidate:"))
		if len(f) < 8 || !strings.HasPrefix(line, "a=candidate:") || !strings.EqualFold(f[2], "udp") {
			continue
		}
		if ap, err := netip.ParseAddrPort(net.JoinHostPort(f[4], f[5])); err == nil && ap.Addr().Is4() {
			return ap
		}
	}
	t.Fatalf("no IPv4 UDP candidate in\n%s", answer)
	return netip.AddrPort{}
}
