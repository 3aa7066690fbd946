package hub

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// path is a path name's slot: it lives from its first publisher until the
// last one leaves for longer than its grace period, so the viewers of a
// publisher that reconnects (or is taken over) stay attached. Each
// publisher is one generation of the slot; frames carry the generation so a
// viewer knows where one publisher's timeline ends and the next begins.
type path struct {
	name string

	// Guarded by Hub.mu: the publisher (nil while the slot waits out a
	// grace period), its address and start, the grace timer, and how many
	// publishers the slot has had, which tells a stale timer from a live one.
	pub    *Publisher
	remote string
	since  time.Time
	grace  *time.Timer
	pubs   uint64

	// members are the pending, reserved and attached readers, guarded by
	// Hub.mu because the caps are decided there; counted is how many of
	// them the caps and the counts see (all but the pending ones).
	members []*Reader
	counted int
	// extra counts the members that are a ladder rung's readers
	// (AddLadderReader): its demand, under no cap.
	extra int
	// ladder is the path's rungs (SetLadder); guarded by mu.
	ladder []Rung
	// A rung's viewers' request for an IDR (RequestLadderIDR).
	idrWanted atomic.Bool
	idrAfter  atomic.Int64

	// wmu is held by fanout (every Write*) for the whole fan-out, and by a
	// change of generation, so the readers' gates and the "only one
	// goroutine pushes" rule survive a publisher taking over from another
	// that is still writing. Lock order: Hub.mu, wmu, mu.
	wmu sync.Mutex

	mu     sync.Mutex
	info   av.StreamInfo
	closed bool
	// gen is the current publisher's generation; a Write from any other
	// is ignored.
	gen uint32
	// readers are the attached readers. The slice is copy-on-write: it is
	// replaced, never changed in place, so Write loops over a snapshot
	// without holding mu.
	readers []*Reader
	// cache holds the current GOP from its IDR while it stays within the
	// limits (see gopcache.go), with the audio from the IDR's PTS on
	// interleaved as it arrived. It is updated under mu together with the
	// snapshot of readers, which is what lets Attach hand a reader
	// cache+live with no gap and no duplicate.
	cache         []Frame
	cacheValid    bool
	cacheVideo    int // video frames in cache
	cacheSource   int // source audio units in cache (see source.go)
	cacheBytes    int // what the cached frames hold, by frameBytes
	cacheMax      int
	audioCacheMax int
	limits        GOPCacheLimits
	// cacheWarned: this generation's GOP outgrew the limits once and
	// said so; one line per publisher, not one per GOP.
	cacheWarned bool
	log         *slog.Logger
	// sawIDR: the current generation has written an IDR, so a new reader
	// starts without waiting for the encoder (see State).
	sawIDR bool
	// recentAudio is a ring of the latest audio frames: a muxer may write
	// audio ahead of the video it plays with, so audio of the new GOP can
	// arrive before its IDR and is picked from here when the IDR comes.
	recentAudio [recentAudioFrames]*av.AudioFrame
	recentNext  int
	// recentSource is recentAudio for the source audio units.
	recentSource     [recentAudioFrames]*av.AudioUnit
	recentSourceNext int

	hasAudio atomic.Bool
	// hasSource: the current publisher sends source audio units
	// (SetSourceAudio).
	hasSource atomic.Bool

	framesIn      atomic.Uint64
	lastFrame     atomic.Int64 // unix ns of the last video frame (State.LastFrame)
	bytesIn       atomic.Uint64
	audioFramesIn atomic.Uint64
	audioBytesIn  atomic.Uint64
	dropped       [numKinds]atomic.Uint64
	congested     atomic.Uint64 // the video drops SkipToIDR asked for
	// What the readers' senders report having sent (Reader.CountSent),
	// departed readers included, so the totals never go backwards.
	packetsOut atomic.Uint64
	bytesOut   atomic.Uint64
}

// recentAudioFrames bounds how far ahead of its video (in 20 ms frames,
// so 640 ms) audio can be muxed and still join the cache at the next IDR;
// ffmpeg's MPEG-TS muxer interleaves within about half a second.
const recentAudioFrames = 32

// audioSlots is how many audio frames go with n video frames: 20 ms audio
// frames against 30 fps video, so queues and the cache hold the same time
// span of both.
func audioSlots(n int) int { return n * 5 / 3 }

func newPath(name, remote string, cacheMax int, log *slog.Logger) *path {
	return &path{
		name:   name,
		remote: remote,
		since:  time.Now(),
		// The cache grows by append to what a path's GOPs need and keeps
		// that capacity from GOP to GOP; sized for the frame bound up
		// front, every path would hold tens of KiB it may never use.
		cacheMax:      cacheMax,
		audioCacheMax: audioSlots(cacheMax),
		log:           log,
	}
}

// attach makes r receive frames: first the cached GOP, then live ones.
// withAudio also delivers audio (cached and live), withSource the source
// audio units.
func (p *path) attach(r *Reader, withAudio, withSource bool) {
	// A pending reader attached without Claim is delivered to, so it is
	// a viewer and counts from now on; its owner chose to skip the caps.
	_ = r.h.claim(r, false)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || r.state != stateReserved {
		return
	}
	r.gate = gateStart
	r.wantAudio = withAudio
	r.wantSource = withSource
	if withAudio || withSource {
		r.videoLimit = cap(r.queue)
	}
	need := p.cacheVideo
	if withAudio {
		need += len(p.cache) - p.cacheVideo - p.cacheSource
	}
	if withSource {
		need += p.cacheSource
	}
	if p.cacheValid {
		r.makeRoom(need)
		for _, f := range p.cache {
			if f.Audio != nil && !withAudio || f.Source != nil && !withSource {
				continue
			}
			f.Gen = p.gen
			r.queue <- f // fits: checked above, and nothing else pushes yet
		}
		r.gate = gateOpen
	}
	r.state = stateAttached
	r.attached.Store(true)
	// Clip forces append to copy, leaving snapshots held by Write intact.
	p.readers = append(slices.Clip(p.readers), r)
}

// detach stops delivery to r for good.
func (p *path) detach(r *Reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.state == stateAttached {
		if i := slices.Index(p.readers, r); i >= 0 {
			next := make([]*Reader, 0, len(p.readers)-1)
			next = append(next, p.readers[:i]...)
			p.readers = append(next, p.readers[i+1:]...)
		}
	}
	r.state = stateClosed
	r.attached.Store(false)
}

// Publisher is the write side of a path. Write and SetInfo are meant for
// the publisher's own goroutine; Close may come from anywhere.
type Publisher struct {
	h         *Hub
	p         *path
	gen       uint32
	grace     time.Duration
	closeOnce sync.Once
	// replaced is closed when a newer publisher took the path over.
	replaced chan struct{}
	// base is the slot's counters when this publisher started, so Stats
	// counts only its own frames; final freezes them when it stops being
	// the path's publisher.
	base  PublisherStats
	final atomic.Pointer[PublisherStats]
	// rend is the path's H.264 rendition (see rendition.go), nil when it
	// has none.
	rend atomic.Pointer[Publisher]
}

// SetInfo records what the stream is, for the API and metrics.
func (pub *Publisher) SetInfo(info av.StreamInfo) {
	pub.p.mu.Lock()
	if pub.p.gen == pub.gen {
		pub.p.info = info
	}
	pub.p.mu.Unlock()
}

// SetAudio declares whether the path carries audio (WriteAudio) from now
// on. Readers added afterwards see it in HasAudio, which is when a viewer
// decides whether to receive audio; readers already there keep what they
// negotiated. It may be called from any goroutine.
func (pub *Publisher) SetAudio(has bool) {
	pub.p.mu.Lock()
	if pub.p.gen == pub.gen {
		pub.p.hasAudio.Store(has)
	}
	pub.p.mu.Unlock()
	if r := pub.rend.Load(); r != nil {
		r.SetAudio(has)
	}
}

// Write hands au to every attached reader. It never blocks on a reader: a
// full queue costs that reader frames up to the next IDR, nothing more. au
// must not be modified afterwards; every reader gets the same pointer.
func (pub *Publisher) Write(au *av.AccessUnit) {
	if au == nil {
		return
	}
	fanout(pub, au, (*path).updateCache, countVideo, (*Reader).push)
}

func countVideo(p *path, au *av.AccessUnit) {
	p.framesIn.Add(1)
	p.bytesIn.Add(uint64(au.Size))
	p.lastFrame.Store(time.Now().UnixNano())
}

// fanout is the one write path behind Write, WriteAudio and
// WriteSourceAudio. wmu is held for the whole of it, so one goroutine
// pushes at a time even while a new publisher takes over from one that is
// still writing. Under mu it drops the write of a publisher that no longer
// owns the path (closed, or taken over: gen moved on), updates the GOP
// cache and takes the readers' snapshot together, which is what lets
// Attach hand a reader cache+live with no gap and no duplicate. Counting
// and pushing happen after mu is released, so an Attach or a Stats never
// waits behind a fan-out. count may be nil. The functions are method
// expressions and plain funcs, not closures: nothing is allocated per
// frame.
func fanout[T any](pub *Publisher, x T, cache func(*path, T), count func(*path, T), push func(*Reader, T, uint32)) {
	p := pub.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	if p.closed || p.gen != pub.gen {
		p.mu.Unlock()
		return
	}
	cache(p, x)
	readers := p.readers
	p.mu.Unlock()

	if count != nil {
		count(p, x)
	}
	for _, r := range readers {
		push(r, x, pub.gen)
	}
}

// WriteAudio hands af to every attached reader that takes audio, in the
// same queue as the video, in the order of the calls: call it from the
// goroutine that calls Write, so the queues keep the demuxer's order (it
// is race-free from another goroutine too). Like Write it never blocks: a
// full queue costs that reader this frame. af must not be modified
// afterwards; every reader gets the same pointer.
func (pub *Publisher) WriteAudio(af *av.AudioFrame) {
	if af == nil {
		return
	}
	fanout(pub, af, (*path).updateAudioCache, countAudio, (*Reader).pushAudio)
	pub.renditionAudio(af, nil)
}

func countAudio(p *path, af *av.AudioFrame) {
	p.audioFramesIn.Add(1)
	p.audioBytesIn.Add(uint64(len(af.Data)))
}

// Close frees the path for the next publisher. With a grace period (see
// PublishOptions) and readers on the path, they stay attached for that long
// and the next publisher continues their stream; otherwise, or when the
// grace period ends with no publisher, every reader ends with ErrEnded. A
// publisher that was taken over leaves the path alone. It is safe to call
// more than once.
func (pub *Publisher) Close() {
	pub.closeOnce.Do(func() {
		if r := pub.rend.Swap(nil); r != nil {
			r.Close() // with its grace: a reconnecting publisher takes its readers on
		}
		pub.h.leave(pub)
	})
}

func (h *Hub) endPath(p *path) {
	h.mu.Lock()
	members := h.removePathLocked(p)
	h.mu.Unlock()
	h.finishPath(p, members)
}

// removePathLocked takes p out of the registry and frees its readers'
// slots; it returns them for finishPath. Called with Hub.mu held, so a
// decision to end p and the ending itself cannot be split by a Publish.
func (h *Hub) removePathLocked(p *path) []*Reader {
	if h.paths[p.name] == p {
		delete(h.paths, p.name)
	}
	if p.grace != nil {
		p.grace.Stop()
		p.grace = nil
	}
	if p.pub != nil {
		p.pub.freeze()
		p.pub = nil
	}
	members := p.members
	p.members = nil
	for _, r := range members {
		r.released = true
		if r.pendingDrops.Load() > 0 {
			h.departed = append(h.departed, r)
		}
	}
	h.total -= p.counted
	p.counted, p.extra = 0, 0
	return members
}

// finishPath stops all delivery on p and ends its readers with ErrEnded.
func (h *Hub) finishPath(p *path, members []*Reader) {
	p.mu.Lock()
	p.closed = true
	p.readers = nil
	p.resetCache()
	p.cache = nil
	clear(p.recentAudio[:])
	clear(p.recentSource[:])
	p.mu.Unlock()

	for _, r := range members {
		r.end()
	}
}
