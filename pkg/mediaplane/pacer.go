package mediaplane

import (
	"container/heap"
	"sync"
	"time"
)

// pacer wakes stepped senders when their catch-up pacing ends, for a whole
// pool on one goroutine. After each IDR's burst to hundreds of viewers
// many senders are a frame or two behind and wait a frame interval between
// frames; a timer per sender would start a goroutine at every firing.
type pacer struct {
	mu  sync.Mutex
	due dueHeap
	// kick tells the goroutine that the earliest deadline moved closer.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type dueJob struct {
	at time.Time
	j  *job
}

// dueHeap orders jobs by deadline. A job appears once per deadline it
// asked for (see job.schedule), and an entry leaves the heap when its
// deadline passes, so its size is bounded by the pool's jobs.
type dueHeap []dueJob

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueJob)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueJob{}
	*h = old[:len(old)-1]
	return e
}

func newPacer() *pacer {
	return &pacer{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start runs the pacer's goroutine until close.
func (p *pacer) start() { go p.run() }

// wakeAt wakes j at (or just after) at; it never blocks.
func (p *pacer) wakeAt(j *job, at time.Time) {
	p.mu.Lock()
	heap.Push(&p.due, dueJob{at: at, j: j})
	first := p.due[0].j == j && p.due[0].at.Equal(at)
	p.mu.Unlock()
	if first {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

func (p *pacer) run() {
	defer close(p.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var ready []*job
	for {
		p.mu.Lock()
		now := time.Now()
		for len(p.due) > 0 && !p.due[0].at.After(now) {
			ready = append(ready, heap.Pop(&p.due).(dueJob).j)
		}
		wait := time.Hour
		if len(p.due) > 0 {
			wait = p.due[0].at.Sub(now)
		}
		p.mu.Unlock()
		for i, j := range ready {
			j.wake()
			ready[i] = nil
		}
		ready = ready[:0]
		t.Reset(wait)
		select {
		case <-t.C:
		case <-p.kick:
		case <-p.stop:
			return
		}
	}
}

// close ends the goroutine start began.
func (p *pacer) close() {
	close(p.stop)
	<-p.done
}
