package mediaplane

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// A job's scheduling state. Its wakes and its pool's workers move it so
// that it is in the ready list at most once and stepped by one worker at
// a time, and a wake during a step is never lost.
const (
	jobIdle    int32 = iota // waits for a wake
	jobQueued               // in the ready list
	jobRunning              // being stepped
	jobAgain                // being stepped, and woken since: step again
	jobDone                 // left the pool
)

// writerPool steps the UDP viewers' senders on a fixed set of workers.
// The publisher's fan-out wakes each reader's sender in turn; a worker
// takes a batch of ready jobs, steps each (stamping and encrypting its
// frames into the worker's Sender), and sends the whole batch with as few
// sendmmsg calls as it fits in. A viewer costs no goroutine, and the
// system calls per frame fall from one per viewer to one per batch when
// many viewers watch one path.
type writerPool struct {
	srv   *Server
	mu    sync.Mutex
	ready sync.Cond
	// queue holds each ready job once (see jobQueued), so its length is
	// bounded by the viewers.
	queue  []*job
	closed bool
	wg     sync.WaitGroup
	pacer  *pacer
}

// job is one viewer's sender in the pool; all but sched belong to the
// step in progress.
type job struct {
	pool  *writerPool
	s     plane.Stepper
	c     *conn
	sched atomic.Int32 // jobIdle...jobDone
	// pacedFor is the deadline the pacer last took, so early wakes do
	// not add more.
	pacedFor time.Time
}

// poolBatch is how many jobs a worker steps before sending: large enough
// to send a P-frame to dozens of viewers per system call, small enough
// that the first of a batch waits well under a millisecond.
const poolBatch = 64

// poolSenderPackets is a worker's Sender capacity: a batch of P-frames
// fits, an IDR to a batch flushes a few times (Queue flushes when full).
// Each packet slot costs 1,500 bytes.
const poolSenderPackets = 512

func newWriterPool(srv *Server) *writerPool {
	p := &writerPool{srv: srv, pacer: newPacer()}
	p.ready.L = &p.mu
	return p
}

// start starts the workers and the pacer; close ends them.
func (p *writerPool) start() {
	p.pacer.start()
	// Two workers even on one CPU: a worker waiting for room in a full
	// socket buffer then does not hold every viewer.
	p.startWorkers(max(2, runtime.GOMAXPROCS(0)))
}

// startWorkers starts n workers, each with a Sender that never blocks.
func (p *writerPool) startWorkers(n int) {
	p.wg.Add(n)
	for range n {
		snd := p.srv.NewSender(poolSenderPackets)
		snd.udpOnly = true
		go p.work(snd)
	}
}

// add steps s for c from now on: once at once (for what queued before),
// then whenever it is woken.
func (p *writerPool) add(c *conn, s plane.Stepper) {
	j := &job{pool: p, s: s, c: c}
	// Queued before its wakes exist: none of them enqueues it again.
	j.sched.Store(jobQueued)
	s.SetWake(j.wake)
	p.enqueue(j)
}

func (p *writerPool) enqueue(j *job) {
	p.mu.Lock()
	p.queue = append(p.queue, j)
	// One worker is woken when the list fills from empty, another for each
	// batch's worth beyond: a fan-out to many viewers is taken in batches
	// rather than one job per wake-up.
	signal := len(p.queue)%poolBatch == 1
	p.mu.Unlock()
	if signal {
		p.ready.Signal()
	}
}

// take waits for ready jobs and moves up to poolBatch of them into dst;
// it returns an empty dst once the pool is closed.
func (p *writerPool) take(dst []*job) []*job {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) == 0 && !p.closed {
		p.ready.Wait()
	}
	n := min(len(p.queue), poolBatch)
	dst = append(dst, p.queue[:n]...)
	rest := copy(p.queue, p.queue[n:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	if rest > 0 {
		p.ready.Signal() // more than a batch: another worker helps
	}
	return dst
}

func (p *writerPool) work(snd *Sender) {
	defer p.wg.Done()
	batch := make([]*job, 0, poolBatch)
	for {
		batch = p.take(batch[:0])
		if len(batch) == 0 {
			return
		}
		// One clock reading serves the whole batch: its steps are bounded
		// (rtpsend's stepFrames per viewer, poolBatch viewers), so it is
		// at most a few milliseconds old at the last one, while reading it
		// several times per frame per viewer showed in the profile.
		now := time.Now()
		for i, j := range batch {
			if !j.step(snd, now) {
				batch[i] = nil
			}
		}
		// Errors are the socket's closing, which ends every viewer.
		_ = snd.Flush()
		for i, j := range batch {
			if j == nil {
				continue
			}
			if !j.sched.CompareAndSwap(jobRunning, jobIdle) {
				j.sched.Store(jobQueued)
				p.enqueue(j)
			}
			batch[i] = nil
		}
	}
}

// step steps the job with its writes queued into snd and reports whether
// it stays in the pool.
func (j *job) step(snd *Sender, now time.Time) bool {
	j.sched.Store(jobRunning)
	if j.leftForTCP() {
		return false
	}
	at, done := j.stepSafe(snd, now)
	if done {
		j.sched.Store(jobDone)
		return false
	}
	// A nomination during the step: snd refused the writes that found
	// the viewer on ICE-TCP (see Sender.udpOnly), and it leaves now
	// rather than losing its packets until its next wake.
	if j.leftForTCP() {
		return false
	}
	switch {
	case at.IsZero():
	case !at.After(now):
		j.sched.CompareAndSwap(jobRunning, jobAgain)
	case !j.pacedFor.Equal(at):
		j.pacedFor = at
		j.pool.pacer.wakeAt(j, at)
	}
	return true
}

// stepSafe is one Step of the viewer's sender with a panic caught: the
// viewer ends (done), the worker goes on with the others.
func (j *job) stepSafe(snd *Sender, now time.Time) (at time.Time, done bool) {
	defer panics.Catch(j.c.v.log(), panics.ViewerSender, func(err error) *slog.Logger {
		j.c.batch = nil
		done = true
		return j.c.failed(err)
	})
	j.c.batch = snd
	at, done = j.s.Step(now)
	j.c.batch = nil
	return at, done
}

// leftForTCP hands the job's sender to a goroutine of its own when the
// viewer's media goes over ICE-TCP, whose writes block, and reports
// whether it did. A wake the pacer still holds finds the job done and
// is lost; the goroutine steps at once, so nothing waits on it.
func (j *job) leftForTCP() bool {
	if !j.c.v.OverTCP() {
		return false
	}
	j.sched.Store(jobDone)
	j.c.runBlocking(j.s)
	return true
}

// wake asks the pool to step the job; it never blocks. Readers call it
// for every frame they queue, the NACK box for every NACK, the pacer when
// a wait ends, and the session once, when it ends.
func (j *job) wake() {
	for {
		switch st := j.sched.Load(); st {
		case jobIdle:
			if j.sched.CompareAndSwap(jobIdle, jobQueued) {
				j.pool.enqueue(j)
				return
			}
		case jobRunning:
			if j.sched.CompareAndSwap(jobRunning, jobAgain) {
				return
			}
		default: // already queued, or stepped again after this step, or gone
			return
		}
	}
}

// close stops the workers once every viewer has left (the caller waits
// for its sessions first).
func (p *writerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ready.Broadcast()
	p.wg.Wait()
	p.pacer.close()
}
