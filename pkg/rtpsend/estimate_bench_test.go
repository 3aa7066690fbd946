package rtpsend

import (
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// BenchmarkStampTransportCC is the per-packet cost of one viewer's
// headers over the shared payloads, as the send path pays it: stamping a
// 720p P-frame's ten packets, numbering them and logging their sends
// (transport-cc only), and writing each header into a send buffer. "none"
// is the path of a viewer without transport-cc (what every viewer paid
// before it); the difference is the cost of the transport-wide number.
// allocs/op must stay 0.
func BenchmarkStampTransportCC(b *testing.B) {
	au := benchPFrame()
	for _, tc := range []struct {
		name string
		id   uint8
	}{{"none", 0}, {"transport-cc", 3}} {
		b.Run(tc.name, func(b *testing.B) {
			st := rtpstamp.NewStamper(1, 102, 0, 0)
			e := newEstimator(tc.id, false, time.Now())
			var pkts []rtp.Packet
			buf := make([]byte, 1500)
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				au.PTS += 3000
				now = now.Add(33 * time.Millisecond)
				pkts = st.Stamp(pkts, au, false)
				e.stamp(pkts, now)
				for i := range pkts {
					rtpstamp.MarshalHeader(buf, &pkts[i].Header)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(au.Payloads)), "ns/packet")
		})
	}
}
