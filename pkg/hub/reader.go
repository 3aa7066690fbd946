package hub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

type readerState uint8

const (
	stateReserved readerState = iota // not attached yet (pending or counted): receives nothing
	stateAttached
	stateClosed
)

// gate decides which frames may enter the queue.
type gate uint8

const (
	gateOpen  gate = iota
	gateStart      // joined without a usable cache: wait for an IDR, not a loss
	gateDrop       // overflowed: drop (and count) everything up to the next IDR
	// The viewer's link is congested (SkipToIDR): drop up to the next IDR
	// as gateDrop does, counted apart so the metrics can tell a link that
	// loses packets from a sender that cannot keep up.
	gateCongested
)

// Frame is one item of a reader's queue: a video access unit, an Opus
// frame or a source audio unit (exactly one is set), in the order the
// publisher wrote them, which is PTS order within each kind.
type Frame struct {
	Video *av.AccessUnit
	Audio *av.AudioFrame
	// Source is an audio unit as the publisher sent it (AAC, MPEG audio
	// or Opus, described by Source.Track), for readers attached with
	// AttachSource, which pass the stream on instead of playing it.
	Source *av.AudioUnit
	// CatchUp marks frames replayed from the GOP cache.
	CatchUp bool
	// Gen is the generation of the publisher that wrote the frame. It
	// changes when a new publisher continues the path (after a takeover
	// or within the grace period): its timestamps start from an origin
	// of their own, and its first video frame is an IDR.
	Gen uint32
}

// Drops are counted per kind because the two are dropped by different
// rules and a viewer notices them differently.
const (
	kindVideo = iota
	kindAudio
	numKinds
)

// Reader is one viewer's bounded queue on a path.
type Reader struct {
	h       *Hub
	p       *path
	session string

	queue chan Frame
	// videoLimit is how full the queue may be for a video frame to enter:
	// the whole queue for a reader that takes audio, only QueueSize for
	// one that does not (its queue may have been sized for audio at
	// AddReader), so a video-only viewer never lags further than before.
	videoLimit int
	// hasAudio is the path's audio state when the reader was added, so the
	// viewer's negotiation and its queue agree; wantAudio is set by
	// AttachAV.
	hasAudio  bool
	wantAudio bool
	done      chan struct{}
	endOnce   sync.Once

	// wantSource is set by AttachSource: the reader takes the source
	// audio units instead of the Opus frames.
	wantSource bool

	state    readerState // guarded by p.mu
	released bool        // slot freed; guarded by Hub.mu
	// counted: the caps and the counts see the reader (AddReader, or a
	// pending reader once claimed); guarded by Hub.mu.
	counted bool
	// extra: a ladder rung's reader (AddLadderReader), never counted.
	extra bool
	// gate is only touched by the publisher's goroutine once the reader is
	// in the readers snapshot; attach sets it under p.mu before that, and
	// Write takes p.mu to load the snapshot, which orders the two.
	gate gate
	// skip is SkipToIDR's request, taken by the publisher's goroutine at
	// its next push: only that goroutine may touch gate.
	skip atomic.Bool

	// wake, when set (SetWake, before Attach), is told of every frame
	// queued and of the end: a sender that serves many readers from a few
	// goroutines polls the reader then instead of waiting on it. Atomic
	// because a publisher leaving may end a reader while it is set.
	wake atomic.Pointer[func()]

	attached     atomic.Bool
	dropped      atomic.Uint64 // every kind
	droppedAudio atomic.Uint64
	pendingDrops atomic.Uint64 // every kind, dropped since the last log line
	pendingAudio atomic.Uint64 // audio among pendingDrops
	delivered    atomic.Uint64
}

// newReader sizes the queue for video alone, or with audioExtra more slots
// when the path has audio: at the same queue length, audio frames (every
// 20 ms) would otherwise shrink how far a viewer may fall behind to under
// half.
func newReader(h *Hub, p *path, session string, queueSize, audioExtra int) *Reader {
	hasAudio := p.hasAudio.Load()
	capacity := queueSize
	if hasAudio || p.hasSource.Load() {
		capacity += audioExtra
	}
	return &Reader{
		h:          h,
		p:          p,
		session:    session,
		queue:      make(chan Frame, capacity),
		videoLimit: queueSize,
		hasAudio:   hasAudio,
		done:       make(chan struct{}),
	}
}

// makeRoom grows the queue when need cached frames do not fit in it, so
// they fit with the reader's whole queue still free behind them for live
// ones: a GOP cache bounded in time (an 8.3 s GOP is 250 frames) is far
// longer than a queue sized for how far a viewer may lag. The video limit
// grows by the same amount, or live video would be dropped behind the
// replay; the growth is bounded by the cache's own limits. Called by
// attach under p.mu, before the reader is in the snapshot (so nothing
// pushes) and before its sender's first receive (Attach's contract).
func (r *Reader) makeRoom(need int) {
	if need <= cap(r.queue)-len(r.queue) && need <= r.videoLimit {
		return
	}
	q := make(chan Frame, cap(r.queue)+need)
	for len(r.queue) > 0 {
		q <- <-r.queue
	}
	r.queue = q
	r.videoLimit += need
}

// push is the publisher's non-blocking hand-off. It drops to the next IDR
// rather than single frames, because a decoder fed a P frame whose
// reference was lost shows a smeared picture until the next IDR anyway.
func (r *Reader) push(au *av.AccessUnit, gen uint32) {
	// An IDR answers a pending request by itself: nothing lies before it
	// to drop, and keeping the request would cost the GOP it starts.
	if r.skip.Load() && r.skip.Swap(false) && !au.IDR && r.gate == gateOpen {
		r.gate = gateCongested
	}
	if !au.IDR {
		switch r.gate {
		case gateStart:
			return
		case gateDrop:
			r.drop()
			return
		case gateCongested:
			r.drop()
			r.p.congested.Add(1)
			return
		}
	}
	// Only the publisher's goroutine sends, so room seen here cannot
	// vanish before the send; the select is belt and braces.
	if len(r.queue) < r.videoLimit {
		select {
		case r.queue <- Frame{Video: au, Gen: gen}:
			r.gate = gateOpen
			r.woken()
			return
		default:
		}
	}
	r.drop()
	r.gate = gateDrop
}

// pushAudio queues an audio frame whenever there is room, whatever the
// video gate says: a viewer dropping video up to the next IDR keeps its
// sound, because people tolerate a frozen picture far better than broken
// sound, and an Opus frame depends on no other frame. A full queue costs
// this one frame (the decoder conceals a single lost frame).
func (r *Reader) pushAudio(af *av.AudioFrame, gen uint32) {
	if !r.wantAudio {
		return
	}
	select {
	case r.queue <- Frame{Audio: af, Gen: gen}:
		r.woken()
	default:
		r.dropAudio()
	}
}

func (r *Reader) woken() {
	if w := r.wake.Load(); w != nil {
		(*w)()
	}
}

// SetWake makes the reader call wake after each frame it queues and once
// when it ends, so a sender can Poll it instead of blocking in RecvFrame.
// It must be called before Attach; wake must not block (it runs on the
// publisher's goroutine, between one reader and the next).
func (r *Reader) SetWake(wake func()) { r.wake.Store(&wake) }

// Poll returns the next queued frame without waiting: ok is false when
// the queue is empty, and err is ErrEnded once the publisher or the
// reader closed (an end wins over queued frames, as in RecvFrame).
func (r *Reader) Poll() (f Frame, ok bool, err error) {
	select {
	case <-r.done:
		return Frame{}, false, ErrEnded
	default:
	}
	select {
	case f = <-r.queue:
		r.delivered.Add(1)
		return f, true, nil
	default:
		return Frame{}, false, nil
	}
}

// SkipToIDR drops the reader's video from the next frame up to the next
// IDR, counted and logged as a full queue's drop is ("reader is too slow"),
// while its audio keeps flowing. A sender calls it when the viewer's link,
// not its queue, is what cannot carry the stream: over UDP a write never
// blocks, so the queue never fills however much the link loses, and
// frames sent into a congested link arrive broken anyway. It may be called
// from any goroutine; a reader already dropping, or waiting for its first
// IDR, is left as it is.
func (r *Reader) SkipToIDR() {
	r.skip.Store(true)
}

func (r *Reader) drop() {
	r.dropped.Add(1)
	r.pendingDrops.Add(1)
	r.p.dropped[kindVideo].Add(1)
}

func (r *Reader) dropAudio() {
	r.dropped.Add(1)
	r.droppedAudio.Add(1)
	r.pendingAudio.Add(1)
	r.pendingDrops.Add(1)
	r.p.dropped[kindAudio].Add(1)
}

func (r *Reader) end() {
	r.endOnce.Do(func() {
		close(r.done)
		r.woken()
	})
}

// Attach starts delivery of video only: the cached GOP from its IDR first
// (catchUp=true), then live frames with no gap and no duplicate. Without a
// usable cache the reader starts at the next IDR. Calling it again, or
// after the publisher left, does nothing. It must come before the first
// receive (RecvFrame, Poll): it may replace the queue to fit the
// cached GOP.
func (r *Reader) Attach() {
	r.p.attach(r, false, false)
}

// AttachAV is Attach for a reader that also takes the path's audio, read
// with RecvFrame. The cached GOP comes with the audio from its IDR's PTS
// on, so a new viewer starts with sound in sync; without a usable cache,
// audio flows at once while video waits for the next IDR. On a path that
// had no audio when the reader was added it is Attach.
func (r *Reader) AttachAV() {
	r.p.attach(r, r.hasAudio, false)
}

// HasAudio reports whether the path had audio when the reader was added;
// a sender decides at that moment whether to offer it, and a publisher
// that gains or loses audio later is seen by the next reader.
func (r *Reader) HasAudio() bool { return r.hasAudio }

// Info is what the path's publisher last said its stream is (zero before
// its first SPS): a viewer's answer picks its codec from it.
func (r *Reader) Info() av.StreamInfo {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.p.info
}

// RecvFrame returns the next queued frame, video or audio. It returns
// ErrEnded once the publisher or the reader closed, and ctx.Err() when ctx
// ends; queued frames win over a done ctx, so draining with a cancelled ctx
// is deterministic.
func (r *Reader) RecvFrame(ctx context.Context) (Frame, error) {
	return r.RecvFrameIdle(ctx, nil)
}

// RecvFrameIdle is RecvFrame that also returns ErrIdle when idle fires
// before a frame comes (a nil idle never fires). A sender whose peer takes
// silence for a dead link, as an SRT reader's read timeout does, sends a
// sign of life then: a path between two publishers sends nothing for as
// long as its grace lasts.
func (r *Reader) RecvFrameIdle(ctx context.Context, idle <-chan time.Time) (Frame, error) {
	select {
	case <-r.done:
		return Frame{}, ErrEnded
	default:
	}
	select {
	case f := <-r.queue:
		r.delivered.Add(1)
		return f, nil
	default:
	}
	select {
	case f := <-r.queue:
		r.delivered.Add(1)
		return f, nil
	case <-r.done:
		return Frame{}, ErrEnded
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	case <-idle:
		return Frame{}, ErrIdle
	}
}

// Backlog is how many frames (of either kind) wait in the queue. A sender
// uses it to tell whether it is behind the live edge (and should pace its
// catch-up) or at it.
func (r *Reader) Backlog() int { return len(r.queue) }

// Dropped is the number of frames, of either kind, this reader lost
// because it was too slow.
func (r *Reader) Dropped() uint64 {
	return r.dropped.Load()
}

// DroppedAudio is the part of Dropped that was audio.
func (r *Reader) DroppedAudio() uint64 {
	return r.droppedAudio.Load()
}

// CountSent adds what the reader's sender put on the wire to its path's
// totals, which the publisher's Stats report.
func (r *Reader) CountSent(packets, bytes int) {
	r.p.packetsOut.Add(uint64(packets))
	r.p.bytesOut.Add(uint64(bytes))
}

// Close frees the reader's slot and ends its Recv with ErrEnded. It is safe
// to call more than once and after the publisher left.
func (r *Reader) Close() {
	r.h.release(r)
	r.p.detach(r)
	r.end()
}
