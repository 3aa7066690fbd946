package whep

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

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
