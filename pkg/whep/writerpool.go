package whep

import (
	"runtime"
	"sync"

	"github.com/srtwhep/srtwhep/pkg/mediaplane"
)

// A stepped writer's scheduling state. Its wakes and its pool's workers
// move it so that it is in the ready list at most once and stepped by one
// worker at a time, and a wake during a step is never lost.
const (
	writerIdle    int32 = iota // waits for a wake
	writerQueued               // in the ready list
	writerRunning              // being stepped
	writerAgain                // being stepped, and woken since: step again
	writerDone                 // left the pool
)

// writerPool steps the own plane's UDP viewers' writers on a fixed set of
// workers. The publisher's fan-out wakes each reader's writer in turn; a
// worker takes a batch of ready writers, steps each (stamping and
// encrypting its frames into the worker's Sender), and sends the whole
// batch with as few sendmmsg calls as it fits in. A viewer costs no
// goroutine, and the system calls per frame fall from one per viewer to
// one per batch when many viewers watch one path.
type writerPool struct {
	mu    sync.Mutex
	ready sync.Cond
	// queue holds each ready writer once (see writerQueued), so its length
	// is bounded by the sessions.
	queue  []*writer
	closed bool
	wg     sync.WaitGroup
	pacer  *pacer
}

// poolBatch is how many writers a worker steps before sending: large
// enough to send a P-frame to dozens of viewers per system call, small
// enough that the first of a batch waits well under a millisecond.
const poolBatch = 64

// poolSenderPackets is a worker's Sender capacity: a batch of P-frames
// fits, an IDR to a batch flushes a few times (Queue flushes when full).
// Each packet slot costs 1,500 bytes.
const poolSenderPackets = 512

func newWriterPool(srv *mediaplane.Server) *writerPool {
	p := &writerPool{pacer: newPacer()}
	p.ready.L = &p.mu
	// Two workers even on one CPU: a worker waiting for room in a full
	// socket buffer then does not hold every viewer.
	n := max(2, runtime.GOMAXPROCS(0))
	p.wg.Add(n)
	for range n {
		go p.work(srv.NewSender(poolSenderPackets))
	}
	return p
}

func (p *writerPool) enqueue(w *writer) {
	p.mu.Lock()
	p.queue = append(p.queue, w)
	// One worker is woken when the list fills from empty, another for each
	// batch's worth beyond: a fan-out to many viewers is taken in batches
	// rather than one writer per wake-up.
	signal := len(p.queue)%poolBatch == 1
	p.mu.Unlock()
	if signal {
		p.ready.Signal()
	}
}

// take waits for ready writers and moves up to poolBatch of them into
// dst; it returns an empty dst once the pool is closed.
func (p *writerPool) take(dst []*writer) []*writer {
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

func (p *writerPool) work(snd *mediaplane.Sender) {
	defer p.wg.Done()
	batch := make([]*writer, 0, poolBatch)
	for {
		batch = p.take(batch[:0])
		if len(batch) == 0 {
			return
		}
		for i, w := range batch {
			w.sched.Store(writerRunning)
			w.own.batch = snd
			if w.step() { // left, and batch cleared (leave)
				batch[i] = nil
				continue
			}
			w.own.batch = nil
		}
		// Errors are the socket's closing, which ends every session.
		_ = snd.Flush()
		for i, w := range batch {
			if w == nil {
				continue
			}
			if !w.sched.CompareAndSwap(writerRunning, writerIdle) {
				w.sched.Store(writerQueued)
				p.enqueue(w)
			}
			batch[i] = nil
		}
	}
}

// close stops the workers once every session has left (the server waits
// for its sessions first).
func (p *writerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ready.Broadcast()
	p.wg.Wait()
	p.pacer.close()
}
