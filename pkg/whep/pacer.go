package whep

import (
	"container/heap"
	"sync"
	"time"
)

// pacer wakes stepped writers when their catch-up pacing ends, for a whole
// pool on one goroutine. After each IDR's burst to hundreds of viewers
// many writers are a frame or two behind and wait catchUpInterval between
// frames; a timer per writer would start a goroutine at every firing.
type pacer struct {
	mu  sync.Mutex
	due dueHeap
	// kick tells the goroutine that the earliest deadline moved closer.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type dueWriter struct {
	at time.Time
	w  *writer
}

// dueHeap orders writers by deadline. A writer appears once per deadline
// it asked for (see writer.paceFor), and an entry leaves the heap when
// its deadline passes, so its size is bounded by the pool's writers.
type dueHeap []dueWriter

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueWriter)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueWriter{}
	*h = old[:len(old)-1]
	return e
}

func newPacer() *pacer {
	p := &pacer{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// wakeAt wakes w at (or just after) at; it never blocks.
func (p *pacer) wakeAt(w *writer, at time.Time) {
	p.mu.Lock()
	heap.Push(&p.due, dueWriter{at: at, w: w})
	first := p.due[0].w == w && p.due[0].at.Equal(at)
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
	var ready []*writer
	for {
		p.mu.Lock()
		now := time.Now()
		for len(p.due) > 0 && !p.due[0].at.After(now) {
			ready = append(ready, heap.Pop(&p.due).(dueWriter).w)
		}
		wait := time.Hour
		if len(p.due) > 0 {
			wait = p.due[0].at.Sub(now)
		}
		p.mu.Unlock()
		for i, w := range ready {
			w.wake()
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

func (p *pacer) close() {
	close(p.stop)
	<-p.done
}
