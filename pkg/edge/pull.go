package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// errNoPicture ends a connection that closed before its stream reached the
// hub: for the back-off it counts as a failed attempt, so a source that
// accepts and hangs up at once is not redialled in a loop.
var errNoPicture = errors.New("the source closed the connection before sending a picture")

// pull is one path's pull: a goroutine that connects, serves, and
// reconnects until nobody wants the path any more.
type pull struct {
	p    *Puller
	path string
	src  Source
	log  *slog.Logger
	// kick asks for an attempt now (a demand arrived during a back-off).
	kick chan struct{}

	mu sync.Mutex
	// changed is closed and replaced at every change below, waking the
	// demands that wait.
	changed   chan struct{}
	connected bool  // a connection to the source is up
	ready     bool  // connected, and the stream's first IDR is in the hub
	done      bool  // the pull has ended
	failures  int   // attempts that failed, ever
	lastErr   error // of the latest failure, nil while connected
	waiters   int   // demands waiting now
	// attempt numbers the failed attempts since the source last delivered
	// a picture, for the log.
	attempt int
	// lastDemand and lastReader feed the linger: when a demand last came,
	// and when the hub last had a reader of the path.
	lastDemand, lastReader time.Time
	lastAttempt            time.Time
}

// update changes the pull's state under its lock and wakes the waiters.
func (pl *pull) update(f func()) {
	pl.mu.Lock()
	f()
	close(pl.changed)
	pl.changed = make(chan struct{})
	pl.mu.Unlock()
}

// wait is one demand: it returns nil once the stream is playable, the
// source's refusal when an attempt made after the demand came is refused,
// or a timeout error after timeout with the last attempt's error.
func (pl *pull) wait(ctx context.Context, timeout time.Duration) error {
	start := time.Now()
	pl.mu.Lock()
	pl.waiters++
	pl.lastDemand = start
	failures := pl.failures
	pl.mu.Unlock()
	defer func() {
		pl.mu.Lock()
		pl.waiters--
		pl.lastDemand = time.Now()
		pl.mu.Unlock()
	}()
	select {
	case pl.kick <- struct{}{}:
	default:
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		pl.mu.Lock()
		ready, done, changed, connected := pl.ready, pl.done, pl.changed, pl.connected
		fresh, lastErr := pl.failures > failures, pl.lastErr
		pl.mu.Unlock()
		var de *srt.DialError
		switch {
		case ready:
			return nil
		case done:
			return errEnded
		case fresh && errors.As(lastErr, &de) && de.Rejected():
			return &Error{Path: pl.path, Source: pl.src.URL, Err: lastErr}
		}
		select {
		case <-changed:
		case <-deadline.C:
			e := &Error{Path: pl.path, Source: pl.src.URL, Err: lastErr, After: timeout, timeout: true}
			switch {
			case connected:
				e.Err, e.state = nil, "connected, but no keyframe yet"
			case lastErr == nil:
				e.state = "no answer yet"
			}
			return e
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run connects, serves and reconnects until the pull is not wanted any
// more or ctx ends.
func (pl *pull) run(ctx context.Context) {
	backoff := minBackoff
	for {
		c, err := pl.dial(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !pl.retry(ctx, err, &backoff) {
				return
			}
			continue
		}
		played, reason, stop := pl.serve(ctx, c)
		if stop {
			return
		}
		if played {
			// The source was fine until now: try again soon, then back off.
			pl.log.Warn("source lost; reconnecting", "reason", reason, "retry_in", minBackoff.String())
			if !pl.p.sleep(pl, ctx, minBackoff) {
				return
			}
			backoff = 2 * minBackoff
			continue
		}
		if !pl.retry(ctx, fmt.Errorf("%w (%s)", errNoPicture, reason), &backoff) {
			return
		}
	}
}

// retry records a failed attempt, logs it once with what to do, and waits
// out the back-off; false when the pull should end instead.
func (pl *pull) retry(ctx context.Context, err error, backoff *time.Duration) bool {
	var attempt int
	pl.update(func() {
		pl.failures++
		pl.attempt++
		pl.lastErr = err
		attempt = pl.attempt
	})
	why := describe(err)
	var de *srt.DialError
	if errors.As(err, &de) && de.Rejected() && de.Reason == srtgo.RejectionReasonNotFound {
		// Not there: answered from memory for a while rather than
		// redialled, so random path names cost the source one dial each.
		pl.p.refused.add(pl.path, &Error{Path: pl.path, Source: pl.src.URL, Err: err}, time.Now())
		pl.p.rlog.warn(pl.p.log, why, "source has no such stream; not asking it again for "+refusedFor.String(), pl.path,
			"source", pl.src.URL, "err", why, "hint", hint(err, pl.src))
		return false
	}
	attrs := []any{"source", pl.src.URL, "attempt", attempt, "retry_in", backoff.String(), "err", why}
	if h := hint(err, pl.src); h != "" {
		attrs = append(attrs, "hint", h)
	}
	pl.p.rlog.warn(pl.p.log, why, "source unavailable; retrying", pl.path, attrs...)
	ok := pl.p.sleep(pl, ctx, *backoff)
	*backoff = min(*backoff*2, maxBackoff)
	return ok
}

func (pl *pull) dial(ctx context.Context) (link, error) {
	pl.mu.Lock()
	pl.lastAttempt = time.Now()
	pl.mu.Unlock()
	latency := pl.src.Latency
	if latency == 0 {
		latency = pl.p.cfg.Latency
	}
	// libsrt's own 3 s, or less when a demand would give up sooner: it
	// ends early enough for the demand to answer with this attempt's
	// reason.
	connectTimeout := 3 * time.Second
	if pl.src.Timeout > 0 {
		connectTimeout = max(min(connectTimeout, pl.src.Timeout*3/4), 100*time.Millisecond)
	}
	return pl.p.dial(ctx, srt.DialConfig{
		Addr:           pl.src.Addr,
		StreamID:       streamID(pl.path, pl.src),
		Passphrase:     pl.src.Passphrase,
		PBKeyLen:       pl.p.cfg.PBKeyLen,
		Latency:        latency,
		ConnectTimeout: connectTimeout,
		ReadTimeout:    pl.p.cfg.ReadTimeout,
	})
}

// streamID asks the source for path: the short form, or the SRT
// access-control form when there are credentials to send.
func streamID(path string, src Source) string {
	if src.User == "" {
		return "read:" + path
	}
	return "#!::r=" + path + ",m=request,u=" + src.User + ",s=" + src.Pass
}

// serve runs one connection through the ingest pipeline and watches the
// hub meanwhile: readiness for the demands, readers for the linger.
// played reports that the stream reached the hub; stop that the pull must
// end (nobody wants it, a publisher took the path, or shutdown).
func (pl *pull) serve(ctx context.Context, c link) (played bool, reason string, stop bool) {
	pl.log.Info("source connected", "remote", c.Remote())
	pl.update(func() { pl.connected, pl.lastErr = true, nil })
	pl.p.cfg.Events.Emit(events.Event{Kind: events.SourceUp, Path: pl.path, Protocol: "srt", ID: pl.src.URL, Remote: c.Remote()})
	served := make(chan error, 1)
	// Owned here: every return below waits for it.
	go func() {
		var err error
		defer func() { served <- err }()
		defer panics.Catch(pl.log, panics.EdgePull, func(e error) *slog.Logger { err = e; c.CloseWith(e.Error()); return nil }, "remote", c.Remote())
		err = c.Serve(ctx)
	}()

	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	end := func(why string) {
		c.CloseWith(why)
		<-served
		reason, stop = why, true
	}
loop:
	for {
		select {
		case err := <-served:
			reason = pl.endReason(err)
			if pl.p.cfg.Hub.State(pl.path).Publisher {
				// Someone publishes to the path here now and took it
				// over; the pull gives way for good.
				reason, stop = "a publisher took the path over", true
			}
			break loop
		case <-ctx.Done():
			end("server shutdown")
			break loop
		case <-tick.C:
			st := pl.p.cfg.Hub.State(pl.path)
			if !played && st.Playable {
				played = true
				pl.update(func() { pl.ready, pl.attempt = true, 0 })
				tick.Reset(idlePoll)
			}
			if pl.idle(st.Readers) {
				end(fmt.Sprintf("no viewers for %s", pl.src.Linger))
				break loop
			}
		}
	}
	c.Close()
	pl.update(func() { pl.ready, pl.connected = false, false })
	pl.p.cfg.Events.Emit(events.Event{Kind: events.SourceDown, Path: pl.path, Protocol: "srt", ID: pl.src.URL,
		Remote: c.Remote(), Reason: reason})
	if stop {
		pl.log.Info("source closed", "reason", reason)
	}
	return played, reason, stop
}

// endReason says why a connection's Serve returned.
func (pl *pull) endReason(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return "the source closed the connection"
	case errors.Is(err, srt.ErrReadTimeout):
		return fmt.Sprintf("the source sent no data for %s", pl.p.cfg.ReadTimeout)
	}
	return err.Error()
}

// idle reports that nobody has wanted the path for the source's linger;
// readers is the hub's count now.
func (pl *pull) idle(readers int) bool {
	now := time.Now()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if readers > 0 || pl.waiters > 0 {
		pl.lastReader = now
		return false
	}
	return now.Sub(pl.lastReader) >= pl.src.Linger && now.Sub(pl.lastDemand) >= max(pl.src.Linger, demandHold)
}

// sleep waits d before the next attempt, or less when a demand kicks (but
// never less than minBackoff after the last attempt began). It returns
// false when the pull should end instead: ctx ended, nobody wants the
// path any more, or a publisher took it.
func (pl *pull) sleep(ctx context.Context, d time.Duration) bool {
	next := time.Now().Add(d)
	pl.mu.Lock()
	earliest := pl.lastAttempt.Add(minBackoff)
	pl.mu.Unlock()
	tick := time.NewTicker(idlePoll)
	defer tick.Stop()
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-pl.kick:
			if next.After(earliest) {
				next = earliest
				timer.Reset(time.Until(next))
			}
		case <-tick.C:
			st := pl.p.cfg.Hub.State(pl.path)
			if st.Publisher {
				pl.log.Info("source closed", "reason", "a publisher streams to the path here")
				return false
			}
			if pl.idle(st.Readers) {
				pl.log.Info("source closed", "reason", fmt.Sprintf("no viewers for %s", pl.src.Linger))
				return false
			}
		}
	}
}
