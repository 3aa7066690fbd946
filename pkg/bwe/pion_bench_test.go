package bwe

import (
	"runtime"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// benchViewers is the viewer count the estimators are compared at.
const benchViewers = 200

// BenchmarkViewers compares what 200 viewers' estimators cost, ours (a
// send log and a GCC each) against pion's (a SendSideBWE each, without a
// pacer): one op sends one 720p P-frame (ten packets) to every viewer,
// recording each send as the estimator needs it; goroutines and
// heap-bytes/viewer are what the 200 estimators hold while idle.
func BenchmarkViewers(b *testing.B) {
	payload := make([]byte, 1200)
	b.Run("ours", func(b *testing.B) {
		heap0, g0 := heapAndGoroutines()
		logs := make([]*SendLog, benchViewers)
		gccs := make([]*GCC, benchViewers)
		for i := range logs {
			logs[i], gccs[i] = &SendLog{}, NewGCC()
		}
		heap1, g1 := heapAndGoroutines()
		defer reportHeld(b, heap1-heap0, g1-g0)
		var seq uint16
		at := time.Duration(0)
		b.ReportAllocs()
		for b.Loop() {
			at += 33 * time.Millisecond
			for _, l := range logs {
				for k := range 10 {
					l.Record(seq+uint16(k), at, len(payload)+20)
				}
			}
			seq += 10
		}
		runtime.KeepAlive(gccs)
	})
	b.Run("pion", func(b *testing.B) {
		heap0, g0 := heapAndGoroutines()
		ests := make([]*gcc.SendSideBWE, benchViewers)
		writers := make([]interceptor.RTPWriter, benchViewers)
		for i := range ests {
			ests[i], writers[i] = newPion(b, 2_500_000)
		}
		b.Cleanup(func() {
			for _, e := range ests {
				_ = e.Close()
			}
		})
		heap1, g1 := heapAndGoroutines()
		defer reportHeld(b, heap1-heap0, g1-g0)
		var seq uint16
		h := rtp.Header{Version: 2, SSRC: 1}
		ext := make([]byte, 2)
		_ = h.SetExtension(3, ext)
		attrs := interceptor.Attributes{}
		b.ReportAllocs()
		for b.Loop() {
			for _, w := range writers {
				for range 10 {
					ext[0], ext[1] = byte(seq>>8), byte(seq)
					if _, err := w.Write(&h, payload, attrs); err != nil {
						b.Fatal(err)
					}
					seq++
				}
			}
		}
	})
}

// BenchmarkFeedback is one viewer's cost of one transport-cc feedback
// (about 32 packets, a 2.5 Mbit/s stream's 100 ms), ours against pion's.
func BenchmarkFeedback(b *testing.B) {
	evs := trace(&link{rate: constant(5 * mbit), queue: 200 * time.Millisecond, prop: 20 * time.Millisecond}, 2.5*mbit, 60*time.Second)
	b.Run("ours", func(b *testing.B) {
		start := time.Unix(1_000_000, 0)
		var log SendLog
		g := NewGCC()
		var acks []Ack
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			// Replay the trace, again and again: only feedback counts.
			for ; ; n = (n + 1) % len(evs) {
				if n == 0 {
					log, g = SendLog{}, NewGCC()
				}
				ev := evs[n]
				if ev.fb == nil {
					log.Record(ev.seq, ev.at, ev.size)
					continue
				}
				acks = log.Acks(ev.fb, acks[:0])
				g.Update(start.Add(ev.at), acks, 40*time.Millisecond)
				n = (n + 1) % len(evs)
				break
			}
		}
	})
	b.Run("pion", func(b *testing.B) {
		e, w := newPion(b, 2_500_000)
		defer e.Close()
		payload := make([]byte, 1500)
		attrs := interceptor.Attributes{}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for ; ; n = (n + 1) % len(evs) {
				ev := evs[n]
				if ev.fb == nil {
					h := rtp.Header{Version: 2, SSRC: 1, SequenceNumber: ev.seq}
					_ = h.SetExtension(3, []byte{byte(ev.seq >> 8), byte(ev.seq)})
					_, _ = w.Write(&h, payload[:ev.size-20], attrs)
					continue
				}
				_ = e.WriteRTCP([]rtcp.Packet{ev.fb}, nil)
				n = (n + 1) % len(evs)
				break
			}
		}
	})
}

// reportHeld reports, after the loop (which resets metrics), what the
// estimators held.
func reportHeld(b *testing.B, heap uint64, goroutines int) {
	b.ReportMetric(float64(goroutines), "goroutines")
	b.ReportMetric(float64(heap)/benchViewers, "heap-bytes/viewer")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchViewers*10), "ns/packet")
}

func heapAndGoroutines() (heap uint64, goroutines int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}
