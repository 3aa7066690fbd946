package hostile

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// bystanderPath is the path the innocent publisher and viewer use; no
// attack in this package targets it.
const bystanderPath = "live/bystander"

// startServer runs the real binary on loopback with extra YAML appended
// to the loopback config.
func startServer(t *testing.T, extra string) *testkit.Server {
	t.Helper()
	return testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), testkit.LoopbackConfig(extra))
}

// source is the i-th attacker address, 127.0.0.(i+2): Linux routes all of
// 127.0.0.0/8 to lo, so each is a distinct client to the server.
func source(i int) net.IP { return net.IPv4(127, 0, 0, byte(i+2)) }

// httpClientFrom is an HTTP client whose connections leave from ip.
func httpClientFrom(ip net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64},
	}
}

// publishTestPattern pushes a 320x240 30 fps H.264 test pattern with a
// 1 s GOP to path until the test ends.
func publishTestPattern(t *testing.T, srv *testkit.Server, path string) *testkit.Process {
	t.Helper()
	return testkit.StartFFmpeg(t, append(testkit.LoopArgs(testPatternClip(t)),
		"-f", "mpegts", srv.SRTURL("publish:"+path))...)
}

// testPatternClip is that pattern encoded once (3 GOPs), played in a loop
// by every publisher here that needs only a live stream: encoding it live
// cost each about 5 % of a core.
func testPatternClip(t *testing.T) string {
	t.Helper()
	return testkit.Clip(t, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30",
		"-frames:v", "90")
}

// bystander is an innocent publisher and viewer on bystanderPath, started
// before an attack; Check after the attack says whether they noticed.
type bystander struct {
	viewer *whepclient.Session
	since  time.Time
	before whepclient.Stats
}

// startBystander publishes on bystanderPath and connects a viewer that
// decodes what it receives; it returns once the viewer has its first IDR.
func startBystander(t *testing.T, srv *testkit.Server) *bystander {
	t.Helper()
	publishTestPattern(t, srv, bystanderPath)
	s := dialViewer(t, srv, bystanderPath, "bystander", whepclient.Options{Decode: true, NACK: true, ReceiverReports: true})
	return &bystander{viewer: s, since: time.Now(), before: s.Stats()}
}

// dialViewer connects a loopback WHEP viewer (who names it in failures)
// to path, retrying while the publisher starts, and returns once it has
// its first IDR; the test's end closes it.
func dialViewer(t *testing.T, srv *testkit.Server, path, who string, opt whepclient.Options) *whepclient.Session {
	t.Helper()
	s := dialSession(t, srv, path, who, opt)
	testkit.WaitFor(t, 10*time.Second, "the "+who+" viewer's first IDR", func() bool {
		return s.Stats().IDRs > 0
	})
	return s
}

// dialSession is dialViewer without the wait for the first IDR.
func dialSession(t *testing.T, srv *testkit.Server, path, who string, opt whepclient.Options) *whepclient.Session {
	t.Helper()
	more := opt.SettingEngine
	opt.SettingEngine = func(se *webrtc.SettingEngine) {
		testkit.LoopbackOnly(se)
		if more != nil {
			more(se)
		}
	}
	var s *whepclient.Session
	testkit.WaitFor(t, 15*time.Second, "the "+who+" viewer connects", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		s, err = whepclient.Dial(ctx, srv.URL("/"+path+"/whep"), opt)
		return err == nil
	})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Check fails the test unless the bystander viewer decoded at least 90 %
// of the 30 fps it was sent since it started (or since the last Check),
// with no broken access unit, and logs its rate.
func (b *bystander) Check(t *testing.T) {
	t.Helper()
	now := time.Now()
	st := b.viewer.Stats()
	elapsed := now.Sub(b.since).Seconds()
	fps := float64(st.DecodedAUs-b.before.DecodedAUs) / elapsed
	broken := st.BrokenAUs - b.before.BrokenAUs
	t.Logf("bystander: %.1f fps decoded over %.1f s, %d broken pictures", fps, elapsed, broken)
	if fps < 27 || broken > 0 {
		t.Errorf("bystander viewer disturbed: %.1f fps (want ≥ 27 of 30), %d broken pictures", fps, broken)
	}
	select {
	case <-b.viewer.Done():
		t.Errorf("bystander viewer's session ended: %v", b.viewer.Err())
	default:
	}
	b.since, b.before = now, st
}

// describeSources names n attacker sources for a test log.
func describeSources(n int) string {
	return fmt.Sprintf("%d sources %v…%v", n, source(0), source(n-1))
}
