package wheplayer

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/testkit/whepserve"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/whep"
	"github.com/srtwhep/srtwhep/pkg/whepevents"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a real hub with a live path, a WHEP server on it with the
// event streams and the layer selection mounted as cmd/srtwhep mounts
// them, and real pion viewers.
type fixture struct {
	h   *hub.Hub
	pub *hub.Publisher
	srv *whep.Server
	ev  *whepevents.Streams
	ly  *Layers
	url string

	mu      sync.Mutex
	refused []string // slugs, as the refusal log got them
}

func (f *fixture) refusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refused...)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, func(f *fixture) { h264clip.Feed(t, f.pub, h264clip.Make(t, 30, 30)) })
}

// newFixtureWith is newFixture with mod's changes to the WHEP server's
// config (nil: none), whose path feed writes.
func newFixtureWith(t *testing.T, mod func(*whep.Config), feed func(*fixture)) *fixture {
	t.Helper()
	f := &fixture{h: hub.New(hub.Config{})}
	var err error
	if f.pub, err = f.h.Publish("live/cam1", "127.0.0.1:5000"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.pub.Close() })
	// What ingest records from the stream's SPS: the source layer's size.
	f.pub.SetInfo(av.StreamInfo{Codec: "H264", Width: 320, Height: 240})
	log := testkit.TestLogger(t, slog.LevelInfo)
	if f.ly, err = New(Config{
		Renditions: f.h,
		Pinned:     func(path, id string) { f.ev.LayersChanged(path, id) },
		Refused: func(r *http.Request, path string, status int, slug, detail string) {
			f.mu.Lock()
			f.refused = append(f.refused, slug)
			f.mu.Unlock()
		},
		Logger: log,
	}); err != nil {
		t.Fatal(err)
	}
	if f.ev, err = whepevents.New(whepevents.Config{
		State:   f.h.State,
		Session: func(path, id string) bool { return f.srv.HasSession(path, id) },
		Layers:  f.ly.EventData,
		Logger:  log,
	}); err != nil {
		t.Fatal(err)
	}
	cfg := whepserve.Config(t, f.h, log)
	cfg.Extensions, cfg.SenderSource = []whep.Extension{f.ev, f.ly}, f.ly.Source
	if mod != nil {
		mod(&cfg)
	}
	if f.srv, err = whep.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.url = whepserve.Serve(t, f.srv, f.srv.Handler(f.ev.Handler(f.ly.Handler(http.NotFoundHandler()))), f.ev.Run)
	feed(f)
	return f
}

func (f *fixture) dial(t *testing.T) *whepclient.Session {
	t.Helper()
	return whepserve.Dial(t, f.url+"/live/cam1/whep")
}

// problem reads a problem body's slug and detail.
func problem(t *testing.T, body string) (slug, detail string) {
	t.Helper()
	var p httpproblem.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem body: %q", body)
	}
	return strings.TrimPrefix(p.Type, httpproblem.TypeBase), p.Detail
}

// layers reads a layers document (the event's data, GET's body).
func layers(t *testing.T, body string) whepclient.Layers {
	t.Helper()
	ls, err := whepclient.ParseLayers([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}
