package ingest

import (
	"sync"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// transcoderSlot is where a video transcoder runs on demand: the one
// running (nil while none does), its hold on the transcode CPU budget,
// and the counters of those stopped before it, so a path's or a rung's
// totals go on across stops. The path's video has one (video.go), and
// each rung of its ladder (rung.go).
//
// The publisher's goroutine starts and stops the transcoder and alone
// uses res; mu guards what readers of the stats (the API, the metrics)
// see: tc, past and why.
type transcoderSlot struct {
	res *cpubudget.Reservation // tc's hold on the budget; nil: none

	mu   sync.Mutex
	tc   *vtranscode.Transcoder
	past vtranscode.Stats // of the transcoders stopped
	why  string           // what tc was started for, as the stats tell it
}

// start runs tc, which holds res (nil: no budget), fed the source GOP
// kept so far; readers see it, with why, once the GOP is queued.
func (s *transcoderSlot) start(tc *vtranscode.Transcoder, res *cpubudget.Reservation, gop []*av.AccessUnit, why string) {
	s.res = res
	go tc.Run() // ends with tc.Close (stop), which waits for it
	for _, au := range gop {
		tc.Write(au)
	}
	s.mu.Lock()
	s.tc, s.why = tc, why
	s.mu.Unlock()
}

// transcoder is the running transcoder; nil while none runs.
func (s *transcoderSlot) transcoder() *vtranscode.Transcoder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tc
}

// stop ends the transcoder and gives its budget back; its counters stay
// in past, its Load as the last one's. Readers see the closed transcoder
// until its counters are in past, in one step under mu: a scrape between
// the two would see the path's transcode counters go down, which
// Prometheus takes for a restart. (A closed Transcoder's Stats,
// RequestIDR and Write are safe: atomics, and a closed done channel.)
func (s *transcoderSlot) stop() {
	tc := s.transcoder()
	if tc == nil {
		return
	}
	tc.Close()
	if s.res != nil {
		s.res.Release()
		s.res = nil
	}
	s.mu.Lock()
	st := tc.Stats()
	s.past = sumTranscode(s.past, st)
	s.past.Load = st.Load
	s.tc = nil
	s.mu.Unlock()
}

// stats is the counters of every transcoder the slot ran, the running
// one's included, and what the last one was started for; Load is the
// running transcoder's (the last one's once stopped).
func (s *transcoderSlot) stats() (vtranscode.Stats, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.past
	if s.tc != nil {
		cur := s.tc.Stats()
		st = sumTranscode(st, cur)
		st.Load = cur.Load
	}
	return st, s.why
}

func sumTranscode(a, b vtranscode.Stats) vtranscode.Stats {
	a.FramesIn += b.FramesIn
	a.FramesOut += b.FramesOut
	a.IDRsOut += b.IDRsOut
	a.Dropped += b.Dropped
	a.Errors += b.Errors
	a.CPU += b.CPU
	a.LatencySum += b.LatencySum
	a.LatencyCount += b.LatencyCount
	a.LatencyMax = max(a.LatencyMax, b.LatencyMax)
	return a
}
