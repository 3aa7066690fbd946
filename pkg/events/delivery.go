package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// post sends one event and reports whether a failure is worth a retry.
func (p *Poster) post(ctx context.Context, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", p.userAgent)
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return true, fmt.Errorf("no answer within %v; check that the receiver is up or raise hooks.timeout", p.cfg.Timeout)
		}
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c/100 == 2:
		return false, nil
	case c >= 500, c == http.StatusRequestTimeout, c == http.StatusTooManyRequests:
		return true, fmt.Errorf("the receiver answered %s", resp.Status)
	default:
		return false, fmt.Errorf("the receiver answered %s, which a retry would not change; check hooks.url and the receiver", resp.Status)
	}
}

func (p *Poster) succeed() {
	p.sent.Add(1)
	p.lastErr.Store(nil)
}

func (p *Poster) fail(ev posted, attempts int, err error) {
	p.failed.Add(1)
	msg := err.Error()
	p.lastErr.Store(&msg)
	p.lastFail = failure{ev: ev, attempts: attempts, err: err}
	p.fails.add(1)
	p.reportFailures()
}

// reportFailures logs the failures since the last line, with the latest
// one's details, at most once a second.
func (p *Poster) reportFailures() {
	n := p.fails.take(time.Now())
	if n == 0 {
		return
	}
	f := p.lastFail
	p.log.Warn(fmt.Sprintf("hook receiver failed, %d events not delivered", n),
		"event", string(f.ev.Kind), "path", f.ev.Path, "seq", f.ev.Seq, "attempts", f.attempts, "err", f.err.Error())
}

// reportDrops logs the drops since the last line at most once a second.
func (p *Poster) reportDrops(stopped bool) {
	n := p.drops.take(time.Now())
	if n == 0 {
		return
	}
	why := fmt.Sprintf("the queue of %d events is full: the receiver answers slower than events arrive", p.cfg.QueueSize)
	switch {
	case stopped:
		why = "the hook sender has stopped (server shutting down)"
	case p.lastErr.Load() != nil:
		why = fmt.Sprintf("the queue of %d events is full while the receiver fails: %s", p.cfg.QueueSize, *p.lastErr.Load())
	}
	p.log.Warn(fmt.Sprintf("hook receiver is too slow, dropped %d events", n), "reason", why)
}

// MetricsSample counts the events for a Prometheus scrape.
func (p *Poster) MetricsSample() metrics.HookSample {
	return metrics.HookSample{Sent: p.sent.Load(), Dropped: p.dropped.Load(), Failed: p.failed.Load()}
}

// MetricsSource returns p.MetricsSample for metrics.Sources, or nil for a
// nil Poster, so a server without hooks exports no hook series.
func (p *Poster) MetricsSource() func() metrics.HookSample {
	if p == nil {
		return nil
	}
	return p.MetricsSample
}

// throttle lets one report through per logEvery and counts what happens
// in between, so that one line says how many. Safe for concurrent use.
type throttle struct {
	last  atomic.Int64  // UnixNano of the last report; 0 before the first
	count atomic.Uint64 // occurrences not reported yet
}

func (t *throttle) add(n uint64) { t.count.Add(n) }

// take returns how many occurrences to report now: 0 when there are none
// or the last report is younger than logEvery.
func (t *throttle) take(now time.Time) uint64 {
	if t.count.Load() == 0 {
		return 0
	}
	last := t.last.Load()
	if last != 0 && now.UnixNano()-last < int64(logEvery) {
		return 0
	}
	if !t.last.CompareAndSwap(last, now.UnixNano()) {
		return 0
	}
	return t.count.Swap(0)
}
