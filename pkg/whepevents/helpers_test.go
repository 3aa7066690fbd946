package whepevents

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/testkit/whepserve"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/refusallog"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a real hub with a live path, a WHEP server on it with the
// event streams mounted as cmd/srtwhep mounts them, and real pion viewers.
type fixture struct {
	h    *hub.Hub
	pub  *hub.Publisher
	srv  *whep.Server
	ev   *Streams
	url  string
	clip []*av.AccessUnit
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{h: hub.New(hub.Config{}), clip: h264clip.Make(t, 30, 30)}
	var err error
	if f.pub, err = f.h.Publish("live/cam1", "127.0.0.1:5000"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.pub.Close() })
	var refused func(r *http.Request, path string, status int, slug, detail string)
	cfg := Config{
		State:   f.h.State,
		Session: func(path, id string) bool { return f.srv.HasSession(path, id) },
		Refused: func(r *http.Request, path string, status int, slug, detail string) {
			refused(r, path, status, slug, detail)
		},
		Logger: testkit.TestLogger(t, slog.LevelInfo),
	}
	if mod != nil {
		mod(&cfg)
	}
	if f.ev, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	wcfg := whepserve.Config(t, f.h, cfg.Logger)
	wcfg.Extensions = []whep.Extension{f.ev}
	if f.srv, err = whep.New(wcfg); err != nil {
		t.Fatal(err)
	}
	l := refusallog.New(cfg.Logger, "event stream refused")
	refused = func(r *http.Request, path string, status int, slug, detail string) {
		l.Refused(r, path, status, slug, detail, "")
	}
	f.url = whepserve.Serve(t, f.srv, f.srv.Handler(f.ev.Handler(http.NotFoundHandler())), f.ev.Run)
	return f
}

func (f *fixture) dial(t *testing.T) *whepclient.Session {
	t.Helper()
	return whepserve.Dial(t, f.url+"/live/cam1/whep")
}

// nextEvent returns the next event of one of the types, skipping others.
func nextEvent(t *testing.T, es *whepclient.EventStream, timeout time.Duration, types ...string) whepclient.Event {
	t.Helper()
	ev, err := es.Next(timeout, func(ev whepclient.Event) bool { return slices.Contains(types, ev.Type) })
	if err != nil {
		t.Fatalf("waiting for %v: %v", types, err)
	}
	return ev
}

func problemSlug(t *testing.T, body string) string {
	t.Helper()
	var p httpproblem.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem body: %q", body)
	}
	return strings.TrimPrefix(p.Type, httpproblem.TypeBase)
}
