package edge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

const origin = "srt://origin.example:7000"

func source() Source {
	return Source{Addr: "192.0.2.9:7000", URL: origin, Timeout: 10 * time.Second, Linger: 300 * time.Millisecond}
}

// TestDemandAdmission: a path without a source, or with a publisher of
// its own, is left to the hub without dialling; concurrent demands of a
// pullable path share one pull and return once its first IDR is in the
// hub.
func TestDemandAdmission(t *testing.T) {
	aus := clipAUs(t)
	var r *memRig
	r = newMemRig(t, source(), func(int) (link, error) { return newMemLink(r.hub, "live/e", aus), nil }, nil)

	own, err := r.hub.Publish("live/own", "192.0.2.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	for _, path := range []string{"live/none", "live/own"} {
		if err := r.p.Demand(t.Context(), path); err != nil {
			t.Errorf("Demand(%s) = %v, want nil at once", path, err)
		}
	}
	if r.p.Pullable("live/none") || !r.p.Pullable("live/e") {
		t.Error("Pullable does not follow the path's source")
	}

	errs := make(chan error, 3)
	for range cap(errs) {
		go func() { errs <- r.p.Demand(t.Context(), "live/e") }()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent demand: %v", err)
		}
	}
	if st := r.hub.State("live/e"); !st.Playable {
		t.Errorf("State after Demand = %+v, want playable", st)
	}
	dials, sleeps, ev := r.record()
	if len(dials) != 1 || len(sleeps) != 0 {
		t.Errorf("%d dials and back-offs %v for 3 concurrent demands, want one dial", len(dials), sleeps)
	}
	want := []events.Event{{Kind: events.SourceUp, Path: "live/e", Protocol: "srt", ID: origin, Remote: "192.0.2.9:7000"}}
	if !slices.Equal(ev, want) {
		t.Errorf("events %+v, want %+v", ev, want)
	}
}

// TestDialConfig: what a pull asks srt.Dial for: the streamid with or
// without credentials, the source's latency or the server's, and a connect
// timeout that ends early enough for a demand to answer with its reason.
func TestDialConfig(t *testing.T) {
	for _, tc := range []struct {
		src     Source
		want    string
		latency time.Duration
		connect time.Duration
	}{
		{Source{}, "read:live/d", 200 * time.Millisecond, 3 * time.Second},
		{Source{User: "edge", Pass: "tok", Latency: time.Second, Timeout: 10 * time.Second},
			"#!::r=live/d,m=request,u=edge,s=tok", time.Second, 3 * time.Second},
		{Source{Timeout: 2 * time.Second}, "read:live/d", 200 * time.Millisecond, 1500 * time.Millisecond},
		{Source{Timeout: 50 * time.Millisecond}, "read:live/d", 200 * time.Millisecond, 100 * time.Millisecond},
	} {
		p, err := New(Config{Hub: hub.New(hub.Config{}), Serve: func(context.Context, *srt.Conn) error { return nil },
			Source: func(string) Source { return tc.src }, Latency: 200 * time.Millisecond, PBKeyLen: 32, ReadTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var got srt.DialConfig
		p.dial = func(_ context.Context, cfg srt.DialConfig) (link, error) { got = cfg; return nil, noAnswer() }
		tc.src.Addr, tc.src.Passphrase = "192.0.2.9:7000", "0123456789"
		pl := &pull{p: p, path: "live/d", src: tc.src}
		if _, err := pl.dial(t.Context()); err == nil {
			t.Fatal("the dial's error was lost")
		}
		want := srt.DialConfig{Addr: tc.src.Addr, StreamID: tc.want, Passphrase: "0123456789", PBKeyLen: 32,
			Latency: tc.latency, ConnectTimeout: tc.connect, ReadTimeout: time.Second}
		if got != want || pl.lastAttempt.IsZero() {
			t.Errorf("source %+v: dialled\n%+v, want\n%+v", tc.src, got, want)
		}
	}
}

// TestRefusalAnswersDemand: a source that refuses the path answers the demand at
// once with its reason, as a refusal (ErrNoPublisher: 404 to a viewer),
// and the log says what to do.
func TestRefusalAnswersDemand(t *testing.T) {
	r := newMemRig(t, source(), func(int) (link, error) { return nil, refused(1404) }, nil)
	err := r.p.Demand(t.Context(), "live/missing")
	var e *Error
	if !errors.As(err, &e) || e.Timeout() || !errors.Is(err, hub.ErrNoPublisher) || err.Error() != "origin "+origin+": no such stream (1404)" {
		t.Fatalf("Demand = %v, want the origin's refusal", err)
	}
	r.logs.WaitLog(t, time.Second, "source has no such stream; not asking it again for 10s", `err="no such stream (1404)"`, "start its publisher")
}

// TestDemandTimesOut: a demand that gets no picture within the source's
// timeout fails as a timeout (the viewer may retry), saying what the pull
// was doing.
func TestDemandTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(r *memRig) (link, error)
		want string
	}{
		{"no answer", func(*memRig) (link, error) { return nil, noAnswer() }, "no answer (connection timed out)"},
		{"no keyframe", func(r *memRig) (link, error) { return newMemLink(r.hub, "live/x", nil), nil }, "connected, but no keyframe yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := source()
			src.Timeout = 300 * time.Millisecond
			var r *memRig
			r = newMemRig(t, src, func(int) (link, error) { return tc.dial(r) }, nil)
			err := r.p.Demand(t.Context(), "live/x")
			var e *Error
			if !errors.As(err, &e) || !e.Timeout() || errors.Is(err, hub.ErrNoPublisher) ||
				err.Error() != "origin "+origin+" sent no picture within 300ms: "+tc.want {
				t.Fatalf("Demand = %v, want a timeout: %s", err, tc.want)
			}
		})
	}
}

// TestBackoff: failed attempts back off from 1 s, doubling up to 30 s; a
// connection that closes before a picture is a failure too; once a
// connection played, losing it retries after 1 s and the doubling starts
// over.
func TestBackoff(t *testing.T) {
	aus := clipAUs(t)
	var r *memRig
	links := make(chan *memLink, 1)
	r = newMemRig(t, source(), func(n int) (link, error) {
		switch n {
		case 2:
			l := newMemLink(r.hub, "live/b", nil)
			l.hangupAt0 = true
			return l, nil
		case 7:
			l := newMemLink(r.hub, "live/b", aus)
			links <- l
			return l, nil
		}
		return nil, noAnswer()
	}, func(n int, ctx context.Context) bool { return n < 8 })

	if err := r.p.Demand(t.Context(), "live/b"); err != nil {
		t.Fatalf("Demand = %v, want the stream of the 8th attempt", err)
	}
	close((<-links).hangup)
	testkit.WaitFor(t, 5*time.Second, "the pull to end", func() bool {
		r.p.mu.Lock()
		defer r.p.mu.Unlock()
		return len(r.p.pulls) == 0
	})
	dials, sleeps, ev := r.record()
	s := time.Second
	want := []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, s, 2 * s}
	if !slices.Equal(sleeps, want) || len(dials) != 9 {
		t.Errorf("%d dials, back-offs %v, want 9 and %v", len(dials), sleeps, want)
	}
	r.logs.WaitLog(t, time.Second, "source unavailable; retrying", "attempt=3", "the source closed the connection before sending a picture",
		"the source accepted the connection but sent no stream")
	r.logs.WaitLog(t, time.Second, "source lost; reconnecting", `reason="the source closed the connection"`, "retry_in=1s")
	// The count of attempts starts over once a connection played.
	r.logs.WaitLog(t, time.Second, "source unavailable; retrying", "attempt=1 retry_in=2s")
	if len(ev) != 4 || ev[1].Kind != events.SourceDown || ev[2].Kind != events.SourceUp || ev[3].Reason != "the source closed the connection" {
		t.Errorf("events %+v, want up/down for the early hang-up, then for the stream", ev)
	}
}

// TestLinger: a reader keeps the pull; once the last one left, the pull
// closes after the source's linger, with the reason in the log, on the
// link and in SourceDown, and the hub drops the path.
func TestLinger(t *testing.T) {
	aus := clipAUs(t)
	var r *memRig
	var l *memLink
	r = newMemRig(t, source(), func(int) (link, error) { l = newMemLink(r.hub, "live/l", aus); return l, nil }, nil)
	if err := r.p.Demand(t.Context(), "live/l"); err != nil {
		t.Fatal(err)
	}
	rd, err := r.hub.AddReader("live/l", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	rd.Attach()
	if f, err := rd.RecvFrame(t.Context()); err != nil || !f.Video.IDR {
		t.Fatalf("first frame: %v", err)
	}
	rd.Close()
	line := r.logs.WaitLog(t, 10*time.Second, "source closed", "no viewers for 300ms")
	if !strings.Contains(line, "path=live/l") || !strings.Contains(line, "source="+origin) {
		t.Errorf("log line %q lacks path and source", line)
	}
	testkit.WaitFor(t, 5*time.Second, "the hub to drop the path", func() bool { return r.hub.State("live/l") == hub.PathState{} })
	if got := l.closedWith(); got != "no viewers for 300ms" {
		t.Errorf("link closed with %q", got)
	}
	dials, sleeps, ev := r.record()
	if len(dials) != 1 || len(sleeps) != 0 || len(ev) != 2 || ev[1].Kind != events.SourceDown || ev[1].Reason != "no viewers for 300ms" {
		t.Errorf("%d dials, back-offs %v, events %+v; want one dial, SourceUp and SourceDown", len(dials), sleeps, ev)
	}
}

// TestPublisherTakesOver: a publisher streaming to a pulled path here
// takes it over; the pull gives way for good and later demands are left
// to the hub.
func TestPublisherTakesOver(t *testing.T) {
	aus := clipAUs(t)
	var r *memRig
	r = newMemRig(t, source(), func(int) (link, error) { return newMemLink(r.hub, "live/t", aus), nil }, nil)
	if err := r.p.Demand(t.Context(), "live/t"); err != nil {
		t.Fatal(err)
	}
	pub, err := r.hub.PublishWith("live/t", "192.0.2.1:1", hub.PublishOptions{Override: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	r.logs.WaitLog(t, 5*time.Second, "source closed", "a publisher took the path over")
	if err := r.p.Demand(t.Context(), "live/t"); err != nil {
		t.Errorf("Demand with a publisher = %v, want nil", err)
	}
	dials, sleeps, ev := r.record()
	if len(dials) != 1 || len(sleeps) != 0 || len(ev) != 2 || ev[1].Reason != "a publisher took the path over" {
		t.Errorf("%d dials, back-offs %v, events %+v; want one dial and SourceDown for the takeover", len(dials), sleeps, ev)
	}
}

// TestIdle: the linger's arithmetic. Readers and waiting demands hold the
// pull; otherwise it ends once both the last reader and the last demand
// are older than the linger, and the last demand older than demandHold.
func TestIdle(t *testing.T) {
	ago := func(d time.Duration) time.Time { return time.Now().Add(-d) }
	h := time.Hour
	for _, tc := range []struct {
		name                   string
		readers, waiters       int
		linger                 time.Duration
		lastReader, lastDemand time.Time
		want                   bool
	}{
		{"a reader", 1, 0, 0, ago(h), ago(h), false},
		{"a waiting demand", 0, 1, 0, ago(h), ago(h), false},
		{"long gone", 0, 0, time.Second, ago(h), ago(h), true},
		{"reader within linger", 0, 0, h, ago(h - time.Minute), ago(2 * h), false},
		{"demand within linger", 0, 0, h, ago(2 * h), ago(h - time.Minute), false},
		{"demand within demandHold", 0, 0, 0, ago(h), ago(demandHold / 4), false},
		{"demand past demandHold", 0, 0, 0, ago(h), ago(demandHold + time.Minute), true},
	} {
		pl := &pull{src: Source{Linger: tc.linger}, waiters: tc.waiters, lastReader: tc.lastReader, lastDemand: tc.lastDemand}
		if got := pl.idle(tc.readers); got != tc.want {
			t.Errorf("%s: idle = %v, want %v", tc.name, got, tc.want)
		}
		if held := tc.readers > 0 || tc.waiters > 0; held && time.Since(pl.lastReader) > time.Minute {
			t.Errorf("%s: a held pull did not restart its linger", tc.name)
		}
	}
}

// TestStopping: a demand before Run waits for it (bounded by its ctx);
// after Run ended no pull starts.
func TestStopping(t *testing.T) {
	p, err := New(Config{Hub: hub.New(hub.Config{}), Serve: func(context.Context, *srt.Conn) error { return nil },
		Source: func(string) Source { return source() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Demand(ctx, "live/s"); !errors.Is(err, context.Canceled) {
		t.Errorf("Demand before Run = %v, want its ctx's error", err)
	}
	run, stop := context.WithCancel(t.Context())
	stop()
	if err := p.Run(run); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(run); err == nil {
		t.Error("a second Run succeeded")
	}
	if err := p.Demand(t.Context(), "live/s"); !errors.Is(err, errStopping) {
		t.Errorf("Demand after Run = %v, want errStopping", err)
	}
}
