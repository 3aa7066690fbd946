package whep

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// interval is what one receiver report adds to the counters: packets
// expected and lost since the previous report.
type interval struct{ packets, lost int }

func repeat(n int, iv interval) []interval {
	out := make([]interval, n)
	for i := range out {
		out[i] = iv
	}
	return out
}

func TestCongestionRule(t *testing.T) {
	cases := []struct {
		name string
		// start is the cumulative lost count of the first report.
		start uint32
		ivs   []interval
		// skips are the indexes of the reports that must skip (report 0
		// only starts the count); hold, the reports after which the viewer
		// counts as congested (NACKs held).
		skips, hold []int
	}{
		{name: "5 % random loss, 2.5 Mbit/s", ivs: repeat(20, interval{260, 13})},
		{name: "19 % loss", ivs: repeat(20, interval{260, 49})},
		{name: "60 % loss", ivs: repeat(7, interval{260, 156}), skips: []int{2, 3, 4, 5, 6}, hold: []int{2, 3, 4, 5, 6}},
		{name: "a burst is not sustained", ivs: []interval{{0, 0}, {260, 130}, {260, 5}, {260, 130}, {260, 5}}},
		{
			name:  "a light window releases NACKs",
			ivs:   []interval{{0, 0}, {260, 130}, {260, 130}, {260, 130}, {260, 2}},
			skips: []int{2, 3}, hold: []int{2, 3},
		},
		{
			// Once congested, one heavy window skips again; a light one
			// ends that, and two are needed again.
			name:  "congested until a light window",
			ivs:   []interval{{0, 0}, {260, 130}, {260, 130}, {260, 2}, {260, 130}, {260, 130}},
			skips: []int{2, 5}, hold: []int{2, 5},
		},
		{
			// Reports more often than the window: they add up to one.
			name:  "frequent reports",
			ivs:   repeat(9, interval{30, 15}),
			skips: []int{8}, hold: []int{8},
		},
		{
			// Too few packets to judge, whatever the ratio says.
			name: "a trickle",
			ivs:  []interval{{0, 0}, {40, 40}, {0, 0}, {40, 40}, {0, 0}},
		},
		{
			// A receiver may lower its cumulative count (late
			// retransmissions); the window lost nothing, not a negative
			// amount that would hide the next window's loss.
			name:  "count lowered",
			ivs:   []interval{{0, 0}, {260, 130}, {260, -200}, {260, 130}, {260, 130}},
			skips: []int{4}, hold: []int{4},
		},
		{
			name:  "24-bit count wraps",
			start: 0xfffe00,
			ivs:   repeat(3, interval{600, 300}),
			skips: []int{2}, hold: []int{2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c congestion
			seq, lost := uint32(1000), tc.start
			var skips, hold []int
			for i, iv := range tc.ivs {
				seq += uint32(iv.packets)
				lost = (lost + uint32(iv.lost)) & 0xffffff
				skip, _ := c.observe(rtcp.ReceptionReport{LastSequenceNumber: seq, TotalLost: lost})
				if skip {
					skips = append(skips, i)
				}
				if c.congested {
					hold = append(hold, i)
				}
			}
			if fmt.Sprint(skips) != fmt.Sprint(tc.skips) || fmt.Sprint(hold) != fmt.Sprint(tc.hold) {
				t.Errorf("skips at %v, NACKs held after %v; want %v, %v", skips, hold, tc.skips, tc.hold)
			}
		})
	}

	t.Run("an old report changes nothing", func(t *testing.T) {
		var c congestion
		c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70000, TotalLost: 0})
		c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70260, TotalLost: 130})
		// Reordered on the way: it must not move the window back.
		if skip, _ := c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70100, TotalLost: 60}); skip {
			t.Fatal("an old report made a skip")
		}
		if skip, loss := c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70520, TotalLost: 260}); !skip || loss != 0.5 {
			t.Errorf("second heavy window: skip %v at loss %v, want a skip at 0.5", skip, loss)
		}
	})
}

// feedHub writes the clip to pub in a loop, a frame every 10 ms, until the
// test ends.
func feedHub(t *testing.T, pub *hub.Publisher, clip []*av.AccessUnit) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			au := *clip[n%len(clip)]
			au.PTS = int64(n) * 3000
			pub.Write(&au)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestCongestedViewerSkipsToIDR: real pion viewers that send receiver
// reports, one losing half its media on the way in (a link far narrower
// than the stream), one losing an eighth (a bad link, not a full one).
// The first skips to the next IDR through the hub's drop path and plays on
// from IDRs; the second never skips.
func TestCongestedViewerSkipsToIDR(t *testing.T) {
	clip := makeClip(t, 60, 30)
	h := hub.New(hub.Config{})
	pub, err := h.Publish("live/cam1", "127.0.0.1:5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	logs := &testkit.LogBuffer{}
	url := startHubServer(t, h, func(c *Config) { c.Logger = logs.Logger(slog.LevelInfo) })
	feedHub(t, pub, clip)

	dial := func(every int) (*whepclient.Session, string) {
		uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mux := webrtc.NewICEUDPMux(nil, &lossyConn{PacketConn: uc, every: every})
		t.Cleanup(func() { mux.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		v, err := whepclient.Dial(ctx, url+"/live/cam1/whep", whepclient.Options{
			ReceiverReports: true,
			SettingEngine: func(se *webrtc.SettingEngine) {
				testkit.LoopbackOnly(se)
				se.SetICEUDPMux(mux)
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
		return v, u[strings.LastIndex(u, "/")+1:]
	}
	narrow, narrowID := dial(2)
	_, lossyID := dial(8)

	line := logs.WaitLog(t, 30*time.Second, "viewer's link loses too much", "session="+narrowID)
	t.Logf("%s", line)
	if !strings.Contains(line, "loss_percent=50") {
		t.Errorf("the line names another loss than the link's 50 %%: %s", line)
	}
	testkit.WaitFor(t, 10*time.Second, "frames dropped for congestion", func() bool {
		return pub.Stats().CongestedFramesDropped > 0
	})
	// Past the skip the narrow viewer plays on from IDRs.
	idrs := narrow.Stats().Keyframes
	testkit.WaitFor(t, 10*time.Second, "IDRs after the skip", func() bool { return narrow.Stats().Keyframes >= idrs+2 })

	// By now the other viewer sent as many reports as the narrow one.
	for _, p := range h.Paths() {
		for _, s := range p.Sessions {
			switch s.Session {
			case narrowID:
				if s.Dropped == 0 {
					t.Errorf("narrow viewer: no frame dropped")
				}
			case lossyID:
				if s.Dropped != 0 {
					t.Errorf("viewer at 12.5 %% loss: %d frames dropped, want none", s.Dropped)
				}
			}
		}
	}
	if ls := logs.Lines("session=" + lossyID); len(ls) > 0 && strings.Contains(strings.Join(ls, "\n"), "loses too much") {
		t.Errorf("the viewer at 12.5 %% loss was called congested: %v", ls)
	}
}
