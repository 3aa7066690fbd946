package ingest

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// A path belongs to a stream, not to a socket. A publisher connection
// claims its path only with its first decodable picture (claim, at the
// demuxer's first IDR); until then it is pending, and a second connection
// to the path is not busy: whichever delivers a picture first claims the
// path, and the others still pending are closed (reasonSuperseded). A
// stranger who connects to a free path and sends padding keeps nothing
// from the encoder reconnecting after it. And a connection that shows no
// stream is closed, claimed or not: no program tables within tablesWait,
// or no media (video access units, decodable or not, and audio frames)
// for mediaTimeout. A claimed publisher that has sent no media for
// stallAfter holds its path only against those not entitled to it: its
// own address, or whoever has the path's credentials, takes it over even
// where overridePublisher is false (mayTakeOver).

const (
	// defaultTablesWait: ffmpeg, OBS and GStreamer send PAT and PMT at
	// least every few hundred milliseconds.
	defaultTablesWait = 5 * time.Second
	// defaultMediaTimeout matches libsrt's own silent-peer timeout: a
	// connection kept up with padding is treated like a silent one.
	defaultMediaTimeout = 5 * time.Second
	// defaultStallAfter: longer than any GOP's gap between units, short
	// enough that a reconnecting encoder is back within seconds.
	defaultStallAfter = 3 * time.Second
	// watchEvery is how often a connection's counters are looked at.
	watchEvery = 500 * time.Millisecond
)

// The reasons a connection is closed for what it did not send, counted
// with the refusals (Refusals), and the one for a pending connection
// another claimed the path from.
const (
	ReasonNoTables   = "no-tables"
	ReasonNoMedia    = "no-media"
	reasonSuperseded = "another publisher delivered a picture first and claimed the path"
)

// watchTimes are the limits above; tests shorten them.
type watchTimes struct {
	tables, media, stall time.Duration
}

func (w watchTimes) orDefaults() watchTimes {
	return watchTimes{
		tables: cmp.Or(w.tables, defaultTablesWait),
		media:  cmp.Or(w.media, defaultMediaTimeout),
		stall:  cmp.Or(w.stall, defaultStallAfter),
	}
}

// connWatch closes a connection that shows no stream, and keeps its
// publisher's lastMedia. It runs on a timer, like pictureWatch: the
// publisher's goroutine sits in Read.
type connWatch struct {
	m     *Manager
	p     *publisher
	d     *tsdemux.Demuxer
	times watchTimes
	start time.Time

	mu     sync.Mutex
	timer  *time.Timer
	done   bool
	tables bool   // the demuxer read the program tables (OnStart)
	media  uint64 // units seen at the last change
	// closed is the reason the watch closed the connection, "" if it
	// did not.
	closed string
}

func (m *Manager) watchConn(p *publisher, d *tsdemux.Demuxer) *connWatch {
	now := time.Now()
	w := &connWatch{m: m, p: p, d: d, times: m.watchTimes.orDefaults(), start: now}
	p.lastMedia.Store(now.UnixNano())
	w.mu.Lock()
	w.timer = time.AfterFunc(watchEvery, w.check)
	w.mu.Unlock()
	return w
}

// sawTables is told when the demuxer has read the program tables.
func (w *connWatch) sawTables() {
	w.mu.Lock()
	w.tables = true
	w.mu.Unlock()
}

func (w *connWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	now := time.Now()
	st := w.d.Stats()
	if media := st.AccessUnits + st.DroppedAUs + st.AudioUnits; media != w.media {
		w.media = media
		w.p.lastMedia.Store(now.UnixNano())
	}
	var reason, text string
	switch {
	case !w.tables && now.Sub(w.start) >= w.times.tables:
		reason, text = ReasonNoTables, fmt.Sprintf("no MPEG-TS program tables (PAT and PMT) within %s", w.times.tables)
	case now.Sub(time.Unix(0, w.p.lastMedia.Load())) >= w.times.media:
		reason, text = ReasonNoMedia, fmt.Sprintf("no media for %s", w.times.media)
	default:
		w.timer.Reset(watchEvery)
		return
	}
	w.done, w.closed = true, text
	w.m.closedFor(reason)
	c := w.p.conn
	w.m.log.Warn("publisher closed: it shows no stream", "path", c.Path(), "remote", c.Remote(), "reason", reason, "detail", text)
	c.CloseWith(text)
}

// stop ends the watch and returns why it closed the connection, "" if it
// did not.
func (w *connWatch) stop() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
	return w.closed
}

// stalled says whether p has sent no media for the stall time.
func (m *Manager) stalled(p *publisher, now time.Time) bool {
	last := p.lastMedia.Load()
	return last != 0 && now.Sub(time.Unix(0, last)) >= m.watchTimes.orDefaults().stall
}

// closedFor counts a connection the watch closed.
func (m *Manager) closedFor(reason string) {
	m.closedMu.Lock()
	m.closed[reason]++
	m.closedMu.Unlock()
}

// addPending notes p as a pending connection of path; under m.mu.
func (m *Manager) addPendingLocked(path string, p *publisher) {
	m.pending[path] = append(m.pending[path], p)
}

// dropPendingLocked forgets p as pending; under m.mu.
func (m *Manager) dropPendingLocked(path string, p *publisher) {
	ps := m.pending[path]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(m.pending, path)
	} else {
		m.pending[path] = ps
	}
}
