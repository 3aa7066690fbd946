package edge

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/ingest"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

func TestMain(m *testing.M) {
	testkit.Main(m, srt.Init, srt.Cleanup)
}

// rig is a puller with the real hub and ingest pipeline behind it.
type rig struct {
	p    *Puller
	hub  *hub.Hub
	logs *testkit.LogBuffer

	mu     sync.Mutex
	events []events.Event
}

func (r *rig) seen() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func newRig(t *testing.T, source func(path string) Source) *rig {
	t.Helper()
	r := &rig{logs: &testkit.LogBuffer{}}
	log := r.logs.Logger(slog.LevelDebug)
	r.hub = hub.New(hub.Config{Logger: log})
	policy := auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})
	t.Cleanup(policy.Close)
	in := ingest.New(ingest.Config{Hub: r.hub, Policy: policy, Logger: log,
		Handover: func(string) ingest.Handover {
			return ingest.Handover{Takeover: ingest.TakeoverEntitled, Grace: 5 * time.Second}
		}})
	var err error
	r.p, err = New(Config{Hub: r.hub, Serve: in.Serve, Source: source, Latency: 120 * time.Millisecond,
		ReadTimeout: 2 * time.Second, Logger: log, Events: func(e events.Event) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.hub.Run(ctx) })
	wg.Go(func() { _ = r.p.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the puller did not stop within 5 s of cancel")
		}
		if t.Failed() {
			t.Logf("logs:\n%s", r.logs.String())
		}
	})
	return r
}

func x264(size string) []string {
	return []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30"}
}

// TestDemandPullsAndLingers: a demand starts one pull of an encrypted
// source and returns once the first IDR is in the hub; readers keep it;
// after the last one leaves it closes after its linger, with SourceUp and
// SourceDown naming the source without its passphrase.
func TestDemandPullsAndLingers(t *testing.T) {
	const pass = "edge-test-passphrase"
	origin := testkit.StartSRTListener(t, 0, "passphrase="+pass, x264("320x240")...)
	url := "srt://" + origin.Addr()
	r := newRig(t, func(path string) Source {
		if path != "live/e" {
			return Source{}
		}
		return Source{Addr: origin.Addr(), Passphrase: pass, URL: url, Timeout: 10 * time.Second, Linger: 500 * time.Millisecond}
	})

	if err := r.p.Demand(t.Context(), "live/none"); err != nil {
		t.Fatalf("a path without a source: %v, want nil at once", err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = r.p.Demand(t.Context(), "live/e") })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("demand %d: %v", i, err)
		}
	}
	t.Logf("first IDR in the hub %v after the demand", time.Since(start).Round(time.Millisecond))
	if st := r.hub.State("live/e"); !st.Playable {
		t.Fatalf("State after Demand = %+v, want playable", st)
	}
	if n := len(r.logs.Lines("source connected")); n != 1 {
		t.Fatalf("%d connections for 3 concurrent demands, want 1", n)
	}

	rd, err := r.hub.AddReader("live/e", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	rd.Attach()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Attach: the reader is handed video only.
	f, err := rd.RecvFrame(ctx)
	if err != nil || !f.Video.IDR {
		t.Fatalf("first frame: %v, IDR %v", err, f.Video != nil && f.Video.IDR)
	}
	// The reader holds the pull well past its linger: a second of frames.
	for first := f.Video.PTS; f.Video.PTS-first < 90000; {
		if f, err = rd.RecvFrame(ctx); err != nil {
			t.Fatalf("the pull ended while a reader was attached: %v", err)
		}
	}
	if !r.hub.State("live/e").Publisher {
		t.Fatal("the pull ended while a reader was attached")
	}
	rd.Close()
	line := r.logs.WaitLog(t, 10*time.Second, "source closed", "no viewers for 500ms")
	if !strings.Contains(line, "path=live/e") || !strings.Contains(line, "source="+url) {
		t.Errorf("log line %q lacks path and source", line)
	}
	testkit.WaitFor(t, 5*time.Second, "the hub to drop the path", func() bool { return r.hub.State("live/e") == hub.PathState{} })

	ev := r.seen()
	if len(ev) != 2 || ev[0].Kind != events.SourceUp || ev[1].Kind != events.SourceDown {
		t.Fatalf("events %+v, want SourceUp then SourceDown", ev)
	}
	for _, e := range ev {
		if e.Path != "live/e" || e.ID != url || e.Protocol != "srt" || e.Remote != origin.Addr() || strings.Contains(e.ID, pass) {
			t.Errorf("event %+v", e)
		}
	}
	if ev[1].Reason != "no viewers for 500ms" {
		t.Errorf("SourceDown reason %q", ev[1].Reason)
	}
}

// TestDemandRefused: the source's reject reason comes back at once as a
// refusal the WHEP handler turns into 404, not as a timeout.
func TestDemandRefused(t *testing.T) {
	origin, err := srt.New(srt.Config{Listen: "127.0.0.1:0",
		Serve:     func(context.Context, *srt.Conn) error { return nil },
		ServeRead: func(context.Context, *srt.Conn) {},
		AdmitRead: func(srt.Request) error {
			return srt.RejectError{Reason: 1404, Msg: "nothing published"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- origin.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-origin.Ready()

	addr := origin.Addr().String()
	r := newRig(t, func(string) Source {
		return Source{Addr: addr, URL: "srt://" + addr, Timeout: 10 * time.Second, Linger: time.Second}
	})
	start := time.Now()
	err = r.p.Demand(t.Context(), "live/missing")
	var e *Error
	if !errors.As(err, &e) || e.Timeout() || !errors.Is(err, hub.ErrNoPublisher) ||
		err.Error() != "origin srt://"+addr+": no such stream (1404)" {
		t.Fatalf("Demand = %v, want the origin's refusal", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	r.logs.WaitLog(t, 5*time.Second, "source has no such stream; not asking it again for 10s",
		`err="no such stream (1404)"`, "start its publisher")
}

// TestDemandTimeout: a source that never answers makes the demand fail
// after its timeout with Timeout() and the attempt's reason, and the pull
// ends after its linger instead of redialling forever.
func TestDemandTimeout(t *testing.T) {
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	addr := sink.LocalAddr().String()
	r := newRig(t, func(string) Source {
		return Source{Addr: addr, URL: "srt://" + addr, Timeout: 1500 * time.Millisecond, Linger: 0}
	})
	start := time.Now()
	err = r.p.Demand(t.Context(), "live/x")
	var e *Error
	if !errors.As(err, &e) || !e.Timeout() || errors.Is(err, hub.ErrNoPublisher) ||
		!strings.HasPrefix(err.Error(), "origin srt://"+addr+" sent no picture within 1.5s") {
		t.Fatalf("Demand = %v, want a timeout", err)
	}
	if d := time.Since(start); d < 1500*time.Millisecond || d > 5*time.Second {
		t.Errorf("the demand gave up after %v, want its 1.5s timeout", d)
	}
	r.logs.WaitLog(t, 5*time.Second, "source unavailable; retrying", "no answer (connection timed out)", "UDP port")
	r.logs.WaitLog(t, 10*time.Second, "source closed", "no viewers")
	if len(r.seen()) != 0 {
		t.Errorf("events %+v for a source that never connected", r.seen())
	}
}
