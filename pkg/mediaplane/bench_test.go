//go:build linux

package mediaplane

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// benchFrame is a P-frame of ten 1,100-byte payloads, cut once and shared
// by every viewer as the publisher shares them.
func benchFrame() *av.AccessUnit {
	au := &av.AccessUnit{}
	for range 10 {
		au.Payloads = append(au.Payloads, fill(0x41, 1100, 3))
	}
	return au
}

// threadCPU is the CPU time, user and system, of the calling thread: with
// the benchmark goroutine locked to its thread, the sender's own cost,
// kernel send path included, apart from the receivers' and other load
// on the machine.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measurePackets runs op b.N times and reports, besides ns/op and
// allocs/op, the wall time and this thread's CPU time per packet.
func measurePackets(b *testing.B, packetsPerOp int, op func(i int)) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := threadCPU(b)
	for i := 0; b.Loop(); i++ {
		op(i)
	}
	cpu = threadCPU(b) - cpu
	n := float64(b.N * packetsPerOp)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/packet")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/packet")
}

// BenchmarkEncryptRTP is the cost of encrypting one 1,100-byte packet in
// place, per SRTP profile.
func BenchmarkEncryptRTP(b *testing.B) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		b.Run(profile.String(), func(b *testing.B) {
			keyLen, _ := profile.KeyLen()
			saltLen, _ := profile.SaltLen()
			ctx, err := srtp.CreateContext(make([]byte, keyLen), make([]byte, saltLen), profile)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, slotSize)
			payload := fill(0x41, 1100, 1)
			h := rtp.Header{Version: 2, PayloadType: 102, SSRC: 1}
			var parsed rtp.Header
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h.SequenceNumber = uint16(i)
				plain := buf[:rtpstamp.HeaderLen+len(payload)]
				rtpstamp.MarshalHeader(plain, &h)
				copy(plain[rtpstamp.HeaderLen:], payload)
				if _, err := ctx.EncryptRTP(plain[:0], plain, &parsed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendFrame is the per-frame send path: for every viewer, stamp
// its headers around the shared payloads, encrypt into the Sender's
// buffer and group into a GSO message; then hand everything to the
// kernel over loopback. "batched" flushes once per frame for all viewers
// (one sendmmsg); "per-viewer" flushes after each viewer (one sendmmsg of
// one GSO message each), the shape of one writer goroutine per viewer.
// One op is one frame to every viewer; allocs/op must be 0.
func BenchmarkSendFrame(b *testing.B) {
	au := benchFrame()
	for _, viewers := range []int{1, 10, 100} {
		for _, mode := range []string{"batched", "per-viewer"} {
			b.Run(fmt.Sprintf("viewers=%d/%s", viewers, mode), func(b *testing.B) {
				srv, vs, sts := benchViewers(b, viewers)
				snd := srv.NewSender(viewers * len(au.Payloads))
				var pkts []rtp.Packet
				// One frame first, so pion/srtp's per-SSRC state exists
				// and allocs/op shows the steady state.
				for j, v := range vs {
					pkts = sts[j].Stamp(pkts, au, false)
					if err := snd.SendFrame(v, pkts); err != nil {
						b.Fatal(err)
					}
				}
				measurePackets(b, viewers*len(au.Payloads), func(i int) {
					au.PTS = int64(i) * 3000
					for j, v := range vs {
						pkts = sts[j].Stamp(pkts, au, false)
						if err := snd.Queue(v, pkts); err != nil {
							b.Fatal(err)
						}
						if mode == "per-viewer" {
							_ = snd.Flush()
						}
					}
					_ = snd.Flush()
				})
				st := srv.Stats()
				b.ReportMetric(float64(st.PacketsSent)/float64(st.Syscalls), "packets/syscall")
				if st.SendErrors > 0 {
					b.Errorf("%d send errors", st.SendErrors)
				}
			})
		}
	}
}

// benchViewers makes n keyed viewers (AES-GCM) sending to one sink on a
// server of their own, with a Stamper each.
func benchViewers(b *testing.B, n int) (*Server, []*Viewer, []*rtpstamp.Stamper) {
	srv, _ := newServer(b, nil)
	s := newSink(b, false)
	vs := make([]*Viewer, n)
	sts := make([]*rtpstamp.Stamper, n)
	for i := range vs {
		vs[i], _ = keyedViewer(b, srv, s.addr(), srtp.ProtectionProfileAeadAes128Gcm)
		sts[i] = rtpstamp.NewStamper(vs[i].VideoSSRC(), 102, 0, 0)
	}
	return srv, vs, sts
}
