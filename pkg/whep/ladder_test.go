package whep

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// feedLadder writes clip to pub in a loop as h264clip.Feed does and, as
// pkg/ingest's rung does, transcodes it with libx264 to rung (IDRs where
// the source has them, and where a viewer asks for one), until the test
// ends.
func feedLadder(t *testing.T, pub, rung *hub.Publisher, clip []*av.AccessUnit, height int) {
	tc, err := vtranscode.New(vtranscode.Config{Codec: vtranscode.CodecH264, FPS: 30, Bitrate: 300_000, MaxHeight: height,
		FollowIDR: true, KeyframeInterval: 8 * time.Second}, func(au *av.AccessUnit) {
		au.Payloads = rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
		rung.Write(au)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); tc.Run() }()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			au := *clip[n%len(clip)]
			au.PTS = int64(n) * 3000
			pub.Write(&au)
			if after, ok := rung.TakeIDRRequest(); ok {
				tc.RequestIDR(after)
			}
			tc.Write(&au)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		tc.Close()
		wg.Wait()
	})
}

// TestLadderSwitchContinuity: a real pion viewer pinned to a lower
// rendition and back gets one stream throughout: the same SSRC (one
// track), contiguous sequence numbers, timestamps that go on, and a new
// picture size at an IDR; the layer contract shows where it is.
func TestLadderSwitchContinuity(t *testing.T) {
	clip := makeClip(t, 60, 30)
	h := hub.New(hub.Config{})
	pub, err := h.Publish("live/cam1", "127.0.0.1:5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	rung, err := pub.AddLadderRendition("120p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rung.Close)
	pub.SetLadder([]hub.Rung{{ID: hub.SourceRung, Width: 320, Height: 240, Bitrate: 1_000_000},
		{ID: "120p", Width: 160, Height: 120, Bitrate: 300_000}})
	logs := &testkit.LogBuffer{}
	srv, hs := startServer(t, hubSource(h), func(c *Config) { c.Ladder = h; c.Logger = logs.Logger(slog.LevelInfo) })
	feedLadder(t, pub, rung, clip, 120)

	var mu sync.Mutex
	var aus []whepclient.AccessUnit
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v, err := whepclient.Dial(ctx, hs.URL+"/live/cam1/whep", whepclient.Options{
		Decode: true, ReceiverReports: true,
		SettingEngine: func(se *webrtc.SettingEngine) { testkit.LoopbackOnly(se) },
		OnAccessUnit: func(au whepclient.AccessUnit) {
			mu.Lock()
			aus = append(aus, au)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	if err := v.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	u := v.SessionURL()
	id := u[strings.LastIndex(u, "/")+1:]

	// height is the picture height of the latest IDR received.
	height := func() int {
		mu.Lock()
		defer mu.Unlock()
		for i := len(aus) - 1; i >= 0; i-- {
			if aus[i].IDR {
				return spsHeight(t, aus[i])
			}
		}
		return 0
	}
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(aus) }
	testkit.WaitFor(t, 10*time.Second, "the source", func() bool { return height() == 240 && received() > 30 })
	st, ok := srv.Layers("live/cam1", id)
	if !ok || len(st.Layers) != 2 || st.Active != SourceLayer || st.Pinned != "" || st.Layers[1].Height != 120 {
		t.Fatalf("layers %+v", st)
	}
	if _, err := srv.PinLayer("live/cam1", id, "90p"); err == nil {
		t.Fatal("pinned a layer the ladder does not have")
	}
	if ok, err := srv.PinLayer("live/cam1", id, "120p"); !ok || err != nil {
		t.Fatalf("PinLayer = %v, %v", ok, err)
	}
	testkit.WaitFor(t, 10*time.Second, "the lower rendition", func() bool { return height() == 120 })
	n := received()
	testkit.WaitFor(t, 10*time.Second, "pictures of it", func() bool { return received() > n+30 })
	if st, _ := srv.Layers("live/cam1", id); st.Active != "120p" || st.Pinned != "120p" {
		t.Fatalf("pinned down: layers %+v", st)
	}
	if _, err := srv.PinLayer("live/cam1", id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.PinLayer("live/cam1", id, SourceLayer); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the source again", func() bool { return height() == 240 })
	n = received()
	testkit.WaitFor(t, 10*time.Second, "pictures of it", func() bool { return received() > n+30 })

	mu.Lock()
	got := append([]whepclient.AccessUnit(nil), aus...)
	mu.Unlock()
	switches := 0
	size := spsHeight(t, got[0])
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if b.FirstSeq != a.LastSeq+1 {
			t.Fatalf("picture %d: sequence %d after %d", i, b.FirstSeq, a.LastSeq)
		}
		d := b.RTPTimestamp - a.RTPTimestamp
		if d == 0 || d >= 1<<31 {
			t.Fatalf("picture %d: timestamp %d after %d, want it to go on", i, b.RTPTimestamp, a.RTPTimestamp)
		}
		// Only IDRs carry an SPS here; that the move itself comes at the
		// new rendition's IDR is pkg/ladder's test, which knows which
		// rendition each picture came from. A switch holds the picture
		// for at most a few frames' time; elsewhere a loaded machine may
		// make the hub skip a slow reader's frames (its sequence numbers
		// stay contiguous), which is no switch's doing.
		if b.IDR {
			if hgt := spsHeight(t, b); hgt != size {
				switches++
				size = hgt
				if d > 3*3000 {
					t.Fatalf("switch at picture %d: timestamp %d after %d, want at most 3 frames on", i, b.RTPTimestamp, a.RTPTimestamp)
				}
			}
		}
	}
	if switches != 2 {
		t.Fatalf("%d size changes at IDRs; want 2 (down and up)", switches)
	}
	if s := v.Stats(); s.SeqGaps != 0 || s.BrokenAUs != 0 {
		t.Fatalf("stats %+v: gaps or broken pictures", s)
	}
	for _, l := range logs.Lines("viewer switched rendition") {
		t.Log(l)
	}
	if up, down := srv.Switches(); up != 1 || down != 1 {
		t.Fatalf("switches up %d down %d; want 1 and 1", up, down)
	}
}

// spsHeight is the picture height of the SPS an IDR access unit carries.
func spsHeight(t *testing.T, au whepclient.AccessUnit) int {
	t.Helper()
	for _, n := range au.NALUs {
		if len(n) > 0 && n[0]&0x1f == 7 {
			var sps h264.SPS
			if err := sps.Unmarshal(n); err != nil {
				t.Fatal(err)
			}
			return sps.Height()
		}
	}
	t.Fatalf("IDR without an SPS")
	return 0
}
