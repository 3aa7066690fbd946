package wheplayer

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// feedLadder writes clip to pub in a loop (h264clip.FeedWith) and, as
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
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); tc.Run() }()
	stop := h264clip.FeedWith(t, pub, clip, func(au *av.AccessUnit) {
		if after, ok := rung.TakeIDRRequest(); ok {
			tc.RequestIDR(after)
		}
		tc.Write(au)
	})
	t.Cleanup(func() {
		stop()
		tc.Close()
		wg.Wait()
	})
}

// TestLadderSwitchContinuity: a real pion viewer pinned to a lower
// rendition and back gets one stream throughout: the same SSRC (one
// track), contiguous sequence numbers, timestamps that go on, and a new
// picture size at an IDR; the layer contract shows where it is.
func TestLadderSwitchContinuity(t *testing.T) {
	clip := h264clip.Make(t, 60, 30)
	f := newFixtureWith(t, nil, func(f *fixture) {
		rung, err := f.pub.AddLadderRendition("120p")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rung.Close)
		f.pub.SetLadder([]hub.Rung{{ID: hub.SourceRung, Width: 320, Height: 240, Bitrate: 1_000_000},
			{ID: "120p", Width: 160, Height: 120, Bitrate: 300_000}})
		feedLadder(t, f.pub, rung, clip, 120)
	})

	var mu sync.Mutex
	var aus []whepclient.AccessUnit
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v, err := whepclient.Dial(ctx, f.url+"/live/cam1/whep", whepclient.Options{
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
	id := sessionID(v)

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
	st, ok := f.ly.state("live/cam1", id)
	if !ok || len(st.Layers) != 2 || st.Active != SourceLayer || st.Pinned != "" || st.Layers[1].Height != 120 {
		t.Fatalf("layers %+v", st)
	}
	if _, err := f.ly.pin("live/cam1", id, "90p"); err == nil {
		t.Fatal("pinned a layer the ladder does not have")
	}
	if ok, err := f.ly.pin("live/cam1", id, "120p"); !ok || err != nil {
		t.Fatalf("PinLayer = %v, %v", ok, err)
	}
	testkit.WaitFor(t, 10*time.Second, "the lower rendition", func() bool { return height() == 120 })
	n := received()
	testkit.WaitFor(t, 10*time.Second, "pictures of it", func() bool { return received() > n+30 })
	if st, _ := f.ly.state("live/cam1", id); st.Active != "120p" || st.Pinned != "120p" {
		t.Fatalf("pinned down: layers %+v", st)
	}
	if _, err := f.ly.pin("live/cam1", id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ly.pin("live/cam1", id, SourceLayer); err != nil {
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
		// new rendition's IDR is pkg/abr's test, which knows which
		// rendition each picture came from. A move up jumps ahead by as
		// much as the rendition's transcoder lags behind the source: a
		// frame or two, more on a loaded machine (CI saw 4). A move that
		// missed its IDR would jump a whole GOP (30 frames here).
		// Elsewhere a loaded machine may make the hub skip a slow
		// reader's frames (its sequence numbers stay contiguous), which
		// is no switch's doing.
		if b.IDR {
			if hgt := spsHeight(t, b); hgt != size {
				switches++
				size = hgt
				if d > 10*3000 {
					t.Fatalf("switch at picture %d: timestamp %d after %d, want at most 10 frames on", i, b.RTPTimestamp, a.RTPTimestamp)
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
	if up, down := f.ly.Switches(); up != 1 || down != 1 {
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

// TestSessionsForgotten: the extension keeps an entry for each session
// that exists, whether its viewer connects or never starts ICE, and
// forgets it when the session ends, so the table is bounded by the WHEP
// server's sessions.
func TestSessionsForgotten(t *testing.T) {
	f := newFixtureWith(t, func(c *whep.Config) { c.Limits.ICEStartTimeout = 1500 * time.Millisecond },
		func(f *fixture) { h264clip.Feed(t, f.pub, h264clip.Make(t, 30, 30)) })
	entries := func() int {
		f.ly.mu.Lock()
		defer f.ly.mu.Unlock()
		return len(f.ly.sessions)
	}
	a, b := f.dial(t), f.dial(t)
	// An offer whose answer is never applied: its session ends at the
	// ICE start timeout.
	resp, body := testkit.Do(t, http.MethodPost, f.url+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("silent offer: %d %s", resp.StatusCode, body)
	}
	if n := entries(); n != 3 {
		t.Errorf("%d entries for 3 sessions", n)
	}
	testkit.WaitFor(t, 10*time.Second, "the silent session to end", func() bool { return len(f.srv.Sessions()) == 2 })
	testkit.WaitFor(t, 5*time.Second, "its entry to go", func() bool { return entries() == 2 })
	for _, v := range []*whepclient.Session{a, b} {
		if _, ok := f.ly.state("live/cam1", sessionID(v)); !ok {
			t.Errorf("session %s has no entry", sessionID(v))
		}
		_ = v.Close()
	}
	testkit.WaitFor(t, 10*time.Second, "the closed sessions' entries to go", func() bool {
		return entries() == 0 && len(f.srv.Sessions()) == 0
	})
}
