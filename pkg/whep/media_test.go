package whep

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// feed publishes the clip to p in a loop, one access unit every 5 ms (fast,
// but paced so loopback socket buffers never overflow), until the test
// ends.
func feed(t *testing.T, p *testPath, clip []*av.AccessUnit) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond) // faster than real time, slower than the catch-up pacing
		defer tick.Stop()
		for n := 0; ; n++ {
			src := clip[n%len(clip)]
			au := *src // same immutable payloads, a later PTS
			au.PTS = int64(n) * 3000
			p.write(&au)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

type auLog struct {
	mu       sync.Mutex
	firstIDR *bool
	count    int
}

func (l *auLog) add(au whepclient.AccessUnit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstIDR == nil {
		idr := au.IDR
		l.firstIDR = &idr
	}
	l.count++
}

func dialViewer(t *testing.T, ctx context.Context, url string, log *auLog) *whepclient.Session {
	t.Helper()
	sess, err := whepclient.Dial(ctx, url, whepclient.Options{
		Decode:        true,
		OnAccessUnit:  log.add,
		SettingEngine: testkit.LoopbackOnly,
		NACK:          true,
		Logger:        testLogger(t),
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestMedia runs a real pion viewer against the server and checks that the
// H.264 it receives starts with an IDR, decodes, and has no sequence gaps;
// then the publisher leaves and the viewer's connection is closed.
func TestMedia(t *testing.T) {
	clip := makeClip(t, 60, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	var writes atomic.Uint64
	srv, hs := startServer(t, src, func(c *Config) {
		c.BeforeWrite = func(string) <-chan struct{} { writes.Add(1); return nil }
	})
	feed(t, p, clip)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var log auLog
	viewer := dialViewer(t, ctx, hs.URL+"/live/cam1/whep", &log)

	testkit.WaitFor(t, 20*time.Second, "90 decoded access units", func() bool { return viewer.Stats().DecodedAUs >= 90 })
	st := viewer.Stats()
	if st.SeqGaps != 0 || st.BrokenAUs != 0 || st.Duplicates != 0 {
		t.Errorf("viewer saw %d sequence gaps, %d broken and %d duplicate packets; want none", st.SeqGaps, st.BrokenAUs, st.Duplicates)
	}
	if st.Width != 320 || st.Height != 240 {
		t.Errorf("decoded size %dx%d, want 320x240", st.Width, st.Height)
	}
	log.mu.Lock()
	if log.firstIDR == nil || !*log.firstIDR {
		t.Errorf("the first access unit the viewer got was not an IDR")
	}
	log.mu.Unlock()
	if writes.Load() == 0 {
		t.Error("BeforeWrite was never called")
	}

	infos := srv.Sessions()
	if len(infos) != 1 || infos[0].State != "connected" || infos[0].PacketsSent == 0 || infos[0].Path != "live/cam1" {
		t.Fatalf("Sessions() = %+v, want one connected session with packets", infos)
	}
	if s := srv.Stats(); s.Sessions != 1 || s.HandshakesInFlight != 0 || s.SessionsOpened != 1 || s.PacketsSent == 0 {
		t.Errorf("Stats() = %+v", s)
	}

	// Publisher gone: the server closes the viewer's PeerConnection.
	p.end()
	select {
	case <-viewer.Done():
	case <-ctx.Done():
		t.Fatal("the viewer was not closed after the publisher left")
	}
	testkit.WaitFor(t, 10*time.Second, "the session to be removed", func() bool {
		return len(srv.Sessions()) == 0 && p.readerCount() == 0
	})
	if s := srv.Stats(); s.PacketsSent < st.Packets {
		t.Errorf("server counted %d packets sent, the viewer received %d", s.PacketsSent, st.Packets)
	}
}

// TestShutdown: ending Run closes every viewer and leaves no goroutine
// behind (goleak in TestMain).
func TestShutdown(t *testing.T) {
	clip := makeClip(t, 30, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	_, hs, stop := startServerStop(t, src, nil)
	feed(t, p, clip)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs [2]auLog
	viewers := []*whepclient.Session{
		dialViewer(t, ctx, hs.URL+"/live/cam1/whep", &logs[0]),
		dialViewer(t, ctx, hs.URL+"/live/cam1/whep", &logs[1]),
	}
	testkit.WaitFor(t, 20*time.Second, "media at both viewers", func() bool {
		return viewers[0].Stats().DecodedAUs > 0 && viewers[1].Stats().DecodedAUs > 0
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, v := range viewers {
		select {
		case <-v.Done():
		case <-ctx.Done():
			t.Fatalf("viewer %d still open after shutdown", i)
		}
	}
	if n := p.readerCount(); n != 0 {
		t.Errorf("%d readers still open after shutdown", n)
	}
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("POST after shutdown: %d %q, want 503 with Retry-After", resp.StatusCode, body)
	}
}

// TestICETCP: a viewer that can only use TCP connects through the ICE-TCP
// fallback and receives media.
func TestICETCP(t *testing.T) {
	clip := makeClip(t, 30, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	_, hs := startServerNet(t, src, func(c *plane.Config) { c.TCPListen = "127.0.0.1:0" }, nil)
	feed(t, p, clip)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var log auLog
	viewer, err := whepclient.Dial(ctx, hs.URL+"/live/cam1/whep", whepclient.Options{
		Decode:       true,
		OnAccessUnit: log.add,
		SettingEngine: func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeTCP4})
		},
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = viewer.Close() })
	if err := viewer.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "30 decoded access units over ICE-TCP", func() bool { return viewer.Stats().DecodedAUs >= 30 })
	if st := viewer.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("viewer saw %d sequence gaps and %d broken access units over TCP", st.SeqGaps, st.BrokenAUs)
	}
}
