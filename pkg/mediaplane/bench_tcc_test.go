package mediaplane

import (
	"encoding/binary"
	"testing"

	"github.com/pion/rtp"
)

// BenchmarkSendFrameTransportCC is BenchmarkSendFrame's batched send of
// one frame to 100 viewers, without and with the transport-wide sequence
// number extension (8 bytes more per packet, written by pion's header
// marshaller and encrypted with the rest): what transport-cc costs the
// send path per packet.
func BenchmarkSendFrameTransportCC(b *testing.B) {
	const viewers = 100
	au := benchFrame()
	for _, tcc := range []bool{false, true} {
		name := "none"
		if tcc {
			name = "transport-cc"
		}
		b.Run(name, func(b *testing.B) {
			srv, vs, sts := benchViewers(b, viewers)
			snd := srv.NewSender(viewers * len(au.Payloads))
			var pkts []rtp.Packet
			// What pkg/rtpsend backs the extensions with, reused.
			ext := make([]rtp.Extension, len(au.Payloads))
			seqBytes := make([]byte, 2*len(au.Payloads))
			var seq uint16
			stamp := func(j int) {
				pkts = sts[j].Stamp(pkts, au, false)
				if !tcc {
					return
				}
				for i := range pkts {
					h := &pkts[i].Header
					bs := seqBytes[2*i : 2*i+2 : 2*i+2]
					binary.BigEndian.PutUint16(bs, seq)
					h.Extensions = ext[i : i : i+1]
					_ = h.SetExtension(3, bs)
					seq++
				}
			}
			for j, v := range vs {
				stamp(j)
				if err := snd.SendFrame(v, pkts); err != nil {
					b.Fatal(err)
				}
			}
			measurePackets(b, viewers*len(au.Payloads), func(i int) {
				au.PTS = int64(i) * 3000
				for j, v := range vs {
					stamp(j)
					if err := snd.Queue(v, pkts); err != nil {
						b.Fatal(err)
					}
				}
				_ = snd.Flush()
			})
			if st := srv.Stats(); st.SendErrors > 0 {
				b.Errorf("%d send errors", st.SendErrors)
			}
		})
	}
}
