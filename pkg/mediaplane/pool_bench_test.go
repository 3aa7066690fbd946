package mediaplane

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// frameStepper is a sender that writes one frame per wake, as rtpsend's
// does at the live edge, and tells the benchmark it has.
type frameStepper struct {
	c    *conn
	au   *av.AccessUnit
	st   *rtpstamp.Stamper
	pkts []rtp.Packet
	wake func()
	// due is set by the benchmark for each frame; the pool's first step
	// (at add) runs before any is.
	due  atomic.Bool
	sent *sync.WaitGroup
}

func (s *frameStepper) SetWake(wake func()) { s.wake = wake }

func (s *frameStepper) Step(time.Time) (time.Time, bool) {
	if s.due.CompareAndSwap(true, false) {
		s.pkts = s.st.Stamp(s.pkts, s.au, false)
		_, _ = s.c.WriteVideo(s.pkts)
		s.sent.Done()
	}
	return time.Time{}, false
}

// BenchmarkWriterPool is the own plane's fan-out as the pool runs it: one
// op wakes every viewer's sender for one ten-packet frame, the workers
// step them in batches into their Senders and send each batch with
// sendmmsg. It reports what BenchmarkSendFrame does, plus the wakes and
// the scheduling, and the packets per system call the batching achieves.
func BenchmarkWriterPool(b *testing.B) {
	au := benchFrame()
	for _, viewers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			srv, _ := newServer(b, nil)
			s := newSink(b, false)
			p := &Plane{srv: srv, pool: newWriterPool(srv)}
			p.senders = senderPool{srv: srv, free: make(chan *Sender, 2*runtime.GOMAXPROCS(0))}
			p.pool.start()
			b.Cleanup(p.pool.close)
			var sent sync.WaitGroup
			ss := make([]*frameStepper, viewers)
			for i := range ss {
				v, _ := keyedViewer(b, srv, s.addr(), srtp.ProtectionProfileAeadAes128Gcm)
				c := &conn{plane: p, v: v}
				ss[i] = &frameStepper{c: c, au: au, st: rtpstamp.NewStamper(v.VideoSSRC(), 102, 0, 0), sent: &sent}
				p.pool.add(c, ss[i])
			}
			frame := func(i int) {
				au.PTS = int64(i) * 3000
				sent.Add(viewers)
				for _, st := range ss {
					st.due.Store(true)
				}
				for _, st := range ss {
					st.wake()
				}
				sent.Wait()
			}
			frame(0) // pion/srtp's per-SSRC state, so allocs/op is the steady state's
			before := srv.Stats()
			b.ReportAllocs()
			for i := 1; b.Loop(); i++ {
				frame(i)
			}
			st := srv.Stats()
			n := float64(b.N * viewers * len(au.Payloads))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/packet")
			b.ReportMetric(float64(st.PacketsSent-before.PacketsSent)/float64(st.Syscalls-before.Syscalls), "packets/syscall")
		})
	}
}
