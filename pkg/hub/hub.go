// Package hub fans access units and Opus frames out from one publisher per
// path to many readers, each behind its own bounded queue that carries both
// kinds in the order they were written.
//
// The publisher never waits for anyone: a reader whose queue is full loses
// video frames up to the next IDR (never single reference frames, so its
// decoder never shows a smeared picture), while its audio keeps entering the
// queue whenever there is room, because a frozen picture is far easier to
// bear than broken sound. The loss is summarised in the log once a second. A last-GOP cache lets a new reader start at once instead of waiting
// up to a whole GOP, because SRT gives us no way to ask the encoder for a
// keyframe.
//
// Lock order: Hub.mu before path.mu. Neither is held while a reader blocks.
package hub

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// Config tunes the hub. Zero values mean the documented defaults.
type Config struct {
	// QueueSize is the per-reader queue capacity in access units (default 128).
	QueueSize int
	// MaxReaders returns the reader cap of a path; 0 or nil means unlimited.
	// It is called at AddReader time, so a config reload takes effect for the
	// next viewer. It must not call back into the hub.
	MaxReaders func(path string) int
	// MaxReadersTotal returns the server-wide reader cap; 0 or nil means
	// unlimited. Same calling rules as MaxReaders.
	MaxReadersTotal func() int
	// Admit, when set, is asked before a new reader is counted; an error
	// refuses it as ErrServerFull (the error says why). The CPU admission
	// control plugs in here, so viewers already watching keep the headroom
	// they need.
	Admit func() error
	// GOPCache returns the last-GOP cache limits of a path (nil:
	// DefaultGOPCacheLimits). It is read when a publisher claims the
	// path, so a reload applies to the next publisher. It must not call
	// back into the hub.
	GOPCache func(path string) GOPCacheLimits
	// GOPCacheFrames is the cache's backstop in video frames (default
	// DefaultGOPCacheFrames), for a stream whose PTS does not advance; on
	// a path with audio the cache also holds 5/3 as many audio frames
	// (20 ms frames next to 30 fps video). A reader whose queue cannot
	// take the cached GOP behind QueueSize free slots gets a queue that
	// can when it attaches.
	GOPCacheFrames int
	// Logger receives the drop summaries; nil discards them.
	Logger *slog.Logger
}

const defaultQueueSize = 128

// dropLogInterval is how often drop counts are summarised; a var so tests
// need not wait a full second.
var dropLogInterval = time.Second

// Hub is the registry of published paths.
type Hub struct {
	cfg Config
	log *slog.Logger

	mu       sync.RWMutex
	paths    map[string]*path
	total    int       // counted readers over all paths (not pending ones)
	departed []*Reader // removed readers whose drops are not logged yet
}

// New returns a hub; it starts nothing until Run.
func New(cfg Config) *Hub {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueSize
	}
	if cfg.GOPCacheFrames <= 0 {
		cfg.GOPCacheFrames = DefaultGOPCacheFrames
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{cfg: cfg, log: log, paths: make(map[string]*path)}
}

// Run owns the ticker that turns drop counters into log lines. It returns
// nil when ctx ends, after a last flush.
func (h *Hub) Run(ctx context.Context) error {
	t := time.NewTicker(dropLogInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.endHeld()
			h.flushDrops()
			return nil
		case <-t.C:
			h.flushDrops()
		}
	}
}

// flushDrops logs, per reader, the frames dropped since its last line. It
// runs on the ticker so a burst that has stopped is still reported.
func (h *Hub) flushDrops() {
	h.mu.Lock()
	var readers []*Reader
	for _, p := range h.paths {
		readers = append(readers, p.members...)
	}
	readers = append(readers, h.departed...)
	clear(h.departed)
	h.departed = h.departed[:0]
	h.mu.Unlock()

	for _, r := range readers {
		n := r.pendingDrops.Swap(0)
		// A drop counted between the two swaps is in audio but not in n;
		// it goes back for the next line.
		audio := r.pendingAudio.Swap(0)
		if audio > n {
			r.pendingAudio.Add(audio - n)
			audio = n
		}
		switch {
		case n == 0:
		case audio == 0:
			h.log.Warn(fmt.Sprintf("reader is too slow, discarding %d frames", n),
				"path", r.p.name, "session", r.session)
		default:
			h.log.Warn(fmt.Sprintf("reader is too slow, discarding %d frames", n),
				"path", r.p.name, "session", r.session, "video", n-audio, "audio", audio)
		}
	}
}

// Publish claims path for a new publisher, refusing a busy path and ending
// the readers as soon as the publisher leaves: PublishWith and zero
// options.
func (h *Hub) Publish(name string, remote string) (*Publisher, error) {
	return h.PublishWith(name, remote, PublishOptions{})
}

// AddReader reserves a reader slot on path. The reader counts against the
// caps at once but receives nothing until Attach, so a viewer still doing
// its ICE handshake fills no queue.
func (h *Hub) AddReader(name, session string) (*Reader, error) {
	return h.addReader(name, session, true)
}

func (h *Hub) addReader(name, session string, counted bool) (*Reader, error) {
	if h.cfg.Admit != nil {
		if err := h.cfg.Admit(); err != nil {
			return nil, fmt.Errorf("read %q: %w: %v", name, ErrServerFull, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.roomLocked(name)
	if err != nil {
		return nil, err
	}
	r := newReader(h, p, session, h.cfg.QueueSize, audioSlots(h.cfg.QueueSize))
	p.members = append(p.members, r)
	if counted {
		h.countLocked(r)
	}
	return r, nil
}

// countLocked makes r one of the readers the caps and the counts see.
// Called with Hub.mu held.
func (h *Hub) countLocked(r *Reader) {
	r.counted = true
	r.p.counted++
	h.total++
}

// release frees r's slot; it is a no-op when the slot is already free.
func (h *Hub) release(r *Reader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	if r.counted {
		r.p.counted--
		h.total--
	}
	if r.extra {
		r.p.extra--
	}
	// slices.Delete zeroes the vacated tail, so the reader can be collected.
	if i := slices.Index(r.p.members, r); i >= 0 {
		r.p.members = slices.Delete(r.p.members, i, i+1)
	}
	if r.pendingDrops.Load() > 0 {
		h.departed = append(h.departed, r)
	}
}

// PathStats is a snapshot of one published path, or of one whose viewers
// wait for a publisher within its grace period (Publisher false).
type PathStats struct {
	Name          string
	Publisher     bool
	Remote        string
	Info          av.StreamInfo
	Readers       int // counted (reserved or attached), not pending
	FramesIn      uint64
	BytesIn       uint64
	FramesDropped uint64 // over every reader the path has had, departed ones included
	Since         time.Time
	Sessions      []ReaderStats
}

// ReaderStats is a snapshot of one reader.
type ReaderStats struct {
	Session   string
	Attached  bool
	Dropped   uint64
	Delivered uint64
}

// Paths returns a snapshot of every published or held path, sorted by name.
func (h *Hub) Paths() []PathStats {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]PathStats, 0, len(h.paths))
	for _, p := range h.paths {
		p.mu.Lock()
		info := p.info
		p.mu.Unlock()
		ps := PathStats{
			Name:          p.name,
			Publisher:     p.pub != nil,
			Remote:        p.remote,
			Info:          info,
			Readers:       p.counted + p.extra,
			FramesIn:      p.framesIn.Load(),
			BytesIn:       p.bytesIn.Load(),
			FramesDropped: p.dropped[kindVideo].Load() + p.dropped[kindAudio].Load(),
			Since:         p.since,
			Sessions:      make([]ReaderStats, 0, p.counted),
		}
		for _, r := range p.members {
			if !r.counted && !r.extra {
				continue // an offer nobody may ever complete is no viewer
			}
			ps.Sessions = append(ps.Sessions, ReaderStats{
				Session:   r.session,
				Attached:  r.attached.Load(),
				Dropped:   r.dropped.Load(),
				Delivered: r.delivered.Load(),
			})
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
