package whepclient

import (
	"log/slog"
	"testing"

	"github.com/pion/rtp"
)

func TestStartsIDR(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"empty", nil, false},
		{"single IDR", []byte{0x65, 0x88}, true},
		{"single non-IDR", []byte{0x41, 0x9a}, false},
		{"single SPS", []byte{0x67, 0x42}, false},
		{"STAP-A SPS PPS IDR", []byte{0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce, 0, 2, 0x65, 0x88}, true},
		{"STAP-A SPS PPS only", []byte{0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce}, false},
		{"STAP-A truncated", []byte{0x78, 0, 9, 0x67}, false},
		{"STAP-A zero size", []byte{0x78, 0, 0, 0x65}, false},
		{"FU-A IDR start", []byte{0x7c, 0x85, 0x88}, true},
		{"FU-A IDR middle", []byte{0x7c, 0x05, 0x88}, false},
		{"FU-A non-IDR start", []byte{0x5c, 0x81, 0x9a}, false},
		{"FU-A short", []byte{0x7c}, false},
	} {
		if got := startsIDR(tc.p); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// craft marshals an RTP packet for the receiver under test.
func craft(t testing.TB, seq uint16, ts uint32, marker bool, payload []byte) []byte {
	b, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 102, SequenceNumber: seq,
		Timestamp: ts, Marker: marker, SSRC: 1}, Payload: payload}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestReceiver(decode bool, onAU func(AccessUnit)) (*receiver, *statsState) {
	st := &statsState{}
	r := &receiver{log: slog.New(slog.DiscardHandler), st: st, decode: decode, onAU: onAU}
	return r, st
}

func TestAssemblerDropsPicturesWithLoss(t *testing.T) {
	var got []AccessUnit
	r, st := newTestReceiver(true, func(au AccessUnit) { got = append(got, au) })
	sps := []byte{0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x47, 0xfe, 0xc8} // content irrelevant here: size parsing is covered by TestReceivesClip
	stapA := append([]byte{0x78, 0, byte(len(sps))}, sps...)
	stapA = append(stapA, 0, 2, 0x68, 0xce)

	// Picture 1: STAP-A + FU-A IDR in three fragments, complete.
	r.handle(craft(t, 1, 3000, false, stapA))
	r.handle(craft(t, 2, 3000, false, []byte{0x7c, 0x85, 0xaa}))
	r.handle(craft(t, 3, 3000, false, []byte{0x7c, 0x05, 0xbb}))
	r.handle(craft(t, 4, 3000, true, []byte{0x7c, 0x45, 0xcc}))
	// Picture 2: middle fragment 6 lost.
	r.handle(craft(t, 5, 6000, false, []byte{0x5c, 0x81, 0x11}))
	r.handle(craft(t, 7, 6000, true, []byte{0x5c, 0x41, 0x33}))
	// Picture 3: single NAL, fine again.
	r.handle(craft(t, 8, 9000, true, []byte{0x41, 0x9a}))
	// Late arrival of 6 is counted but not assembled.
	r.handle(craft(t, 6, 6000, false, []byte{0x5c, 0x01, 0x22}))

	if len(got) != 2 {
		t.Fatalf("got %d access units, want 2", len(got))
	}
	if !got[0].IDR || len(got[0].NALUs) != 3 || string(got[0].NALUs[2]) != "\x65\xaa\xbb\xcc" ||
		got[0].FirstSeq != 1 || got[0].LastSeq != 4 || got[0].RTPTimestamp != 3000 {
		t.Errorf("first AU = %+v", got[0])
	}
	if got[1].IDR || got[1].RTPTimestamp != 9000 || string(got[1].NALUs[0]) != "\x41\x9a" {
		t.Errorf("second AU = %+v", got[1])
	}
	if st.brokenAUs.Load() != 1 || st.seqGaps.Load() != 0 || st.reordered.Load() != 1 ||
		st.frames.Load() != 3 || st.keyframes.Load() != 1 || st.packets.Load() != 8 {
		t.Errorf("broken=%d gaps=%d reordered=%d frames=%d keyframes=%d packets=%d",
			st.brokenAUs.Load(), st.seqGaps.Load(), st.reordered.Load(), st.frames.Load(),
			st.keyframes.Load(), st.packets.Load())
	}
}

func TestAssemblerFlushesOnTimestampChange(t *testing.T) {
	var got []AccessUnit
	r, st := newTestReceiver(true, func(au AccessUnit) { got = append(got, au) })
	// A sender that never sets the marker bit still yields pictures.
	r.handle(craft(t, 1, 3000, false, []byte{0x65, 1}))
	r.handle(craft(t, 2, 6000, false, []byte{0x41, 2}))
	r.handle(craft(t, 3, 9000, false, []byte{0x41, 3}))
	if len(got) != 2 || !got[0].IDR || got[1].IDR || st.frames.Load() != 0 {
		t.Errorf("got %+v, frames %d", got, st.frames.Load())
	}
}

func TestLightModeDoesNotAllocate(t *testing.T) {
	r, _ := newTestReceiver(false, nil)
	pkts := [][]byte{
		craft(t, 1, 3000, false, []byte{0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce}),
		craft(t, 2, 3000, false, []byte{0x7c, 0x85, 0xaa}),
		craft(t, 3, 3000, true, []byte{0x7c, 0x45, 0xcc}),
	}
	seq := uint16(0)
	allocs := testing.AllocsPerRun(1000, func() {
		for _, p := range pkts {
			seq++
			p[2], p[3] = byte(seq>>8), byte(seq)
			r.handle(p)
		}
	})
	if allocs != 0 {
		t.Errorf("light mode allocates %.1f times per picture", allocs)
	}
}

func BenchmarkLightModePacket(b *testing.B) {
	r, _ := newTestReceiver(false, nil)
	p := craft(b, 0, 3000, true, make([]byte, 1200))
	p[12] = 0x7c
	p[13] = 0x05
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		p[2], p[3] = byte(i>>8), byte(i)
		r.handle(p)
	}
}

func FuzzReceiver(f *testing.F) {
	f.Add([]byte{0x80, 0xe6, 0, 1, 0, 0, 0x0b, 0xb8, 0, 0, 0, 1, 0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce})
	f.Add([]byte{0x80, 0x66, 0, 2, 0, 0, 0x0b, 0xb8, 0, 0, 0, 1, 0x7c, 0x85, 0xaa})
	f.Add([]byte{0xa0, 0xe6, 0, 3, 0, 0, 0x0b, 0xb8, 0, 0, 0, 1, 0x65, 0x88, 0, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, st := newTestReceiver(true, func(au AccessUnit) {
			for _, n := range au.NALUs {
				if len(n) == 0 {
					t.Fatal("empty NAL unit delivered")
				}
			}
		})
		// Feed the input as several packets so multi-packet state is exercised.
		for len(data) > 0 {
			n := min(len(data), 1+int(data[0])%64+12)
			r.handle(data[:n])
			data = data[n:]
		}
		_ = st
	})
}
