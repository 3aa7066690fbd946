// Package whepserve runs a WHEP server (pkg/whep) on the own media plane
// over a real hub, with its extensions mounted as cmd/srtwhep mounts them,
// for the tests of those extensions (pkg/whepevents, pkg/wheplayer), and
// dials it with a real pion viewer.
package whepserve

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// Config is a whep.Config over h's paths on a loopback media plane, with
// per-client offer rates far above what a test sends (the tests of the
// rates are pkg/whep's): the caller adds its extensions and hooks.
func Config(t *testing.T, h *hub.Hub, log *slog.Logger) whep.Config {
	t.Helper()
	pl, err := mediaplane.NewPlane(plane.Config{UDPListen: "127.0.0.1:0", IncludeLoopback: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return whep.Config{
		Source: whep.SourceFuncs[*hub.Reader]{Add: h.AddPendingReader, AddTranscoded: h.AddPendingTranscodedReader},
		Plane:  pl, Logger: log,
		Limits: admission.ViewerLimits{OfferRate: 1 << 20, OfferBurst: 1 << 20},
	}
}

// Serve runs srv and each of runs (an extension's Run) until the test
// ends, serves handler (srv's, around the extensions') over HTTP, and
// returns its base URL. Cleanup stops the HTTP server, then the runs, and
// fails the test if srv's Run failed.
func Serve(t *testing.T, srv *whep.Server, handler http.Handler, runs ...func(context.Context) error) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(ctx) }()
	runsDone := make(chan struct{}, len(runs))
	for _, run := range runs {
		go func() { _ = run(ctx); runsDone <- struct{}{} }()
	}
	<-srv.Ready()
	hs := httptest.NewServer(handler)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		if err := <-srvDone; err != nil {
			t.Errorf("whep Run: %v", err)
		}
		for range runs {
			<-runsDone
		}
	})
	return hs.URL
}

// Dial connects a pion viewer to url's path (base URL + "/PATH/whep"),
// closed when the test ends.
func Dial(t *testing.T, whepURL string) *whepclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := whepclient.Dial(ctx, whepURL, whepclient.Options{SettingEngine: testkit.LoopbackOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}
