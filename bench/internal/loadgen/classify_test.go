package loadgen

import (
	"encoding/binary"
	"testing"
)

func rtpPacket(marker bool, pt uint8, seq uint16, ts, ssrc uint32, payload int) []byte {
	b := make([]byte, 12+payload)
	b[0] = 0x80
	b[1] = pt
	if marker {
		b[1] |= 0x80
	}
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], ts)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

func TestClassify(t *testing.T) {
	stunBinding := []byte{0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	dtlsHello := []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20}
	dtlsAppData := []byte{23, 0xfe, 0xfd, 0, 1}
	rtcpSR := []byte{0x80, 200, 0, 6, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}
	rtcpRR := []byte{0x81, 201, 0, 7, 1, 2, 3, 4}
	rtcpPSFB := []byte{0x81, 206, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct {
		name string
		b    []byte
		want Kind
	}{
		{"empty", nil, KindOther},
		{"STUN binding request", stunBinding, KindSTUN},
		{"DTLS handshake", dtlsHello, KindDTLS},
		{"DTLS application data", dtlsAppData, KindDTLS},
		{"RTP H.264 PT 102", rtpPacket(false, 102, 1, 2, 3, 100), KindRTP},
		{"RTP with marker", rtpPacket(true, 102, 1, 2, 3, 100), KindRTP},
		{"RTP PT 96 header only", rtpPacket(false, 96, 1, 2, 3, 0), KindRTP},
		{"RTCP sender report", rtcpSR, KindRTCP},
		{"RTCP receiver report", rtcpRR, KindRTCP},
		{"RTCP PLI", rtcpPSFB, KindRTCP},
		{"RTP shorter than a header", rtpPacket(false, 102, 1, 2, 3, 0)[:11], KindOther},
		{"one byte of RTP", []byte{0x80}, KindOther},
		{"ZRTP range", []byte{16, 0, 0}, KindOther},
		{"TURN channel", []byte{0x40, 0x00, 0, 4}, KindOther},
		{"version 3", []byte{0xc0, 102, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, KindOther},
	}
	for _, c := range cases {
		if got := Classify(c.b); got != c.want {
			t.Errorf("%s: Classify = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseRTPHeader(t *testing.T) {
	h, ok := ParseRTPHeader(rtpPacket(true, 102, 65535, 0xdeadbeef, 0x01020304, 10))
	if !ok {
		t.Fatal("ParseRTPHeader rejected a full header")
	}
	want := RTPHeader{Marker: true, PayloadType: 102, Seq: 65535, Timestamp: 0xdeadbeef, SSRC: 0x01020304}
	if h != want {
		t.Errorf("got %+v, want %+v", h, want)
	}
	if _, ok := ParseRTPHeader(make([]byte, 11)); ok {
		t.Error("ParseRTPHeader accepted 11 bytes")
	}
}

// FuzzClassify checks that the classifier never panics and that its
// answers agree with RFC 7983's first-byte ranges and with the parser.
func FuzzClassify(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x00, 0x01})
	f.Add([]byte{22, 0xfe, 0xfd})
	f.Add(rtpPacket(true, 102, 7, 8, 9, 0))
	f.Add([]byte{0x80, 200, 0, 6})
	f.Fuzz(func(t *testing.T, b []byte) {
		k := Classify(b)
		_, parsed := ParseRTPHeader(b)
		switch k {
		case KindSTUN:
			if b[0] > 3 {
				t.Fatalf("STUN with first byte %d", b[0])
			}
		case KindDTLS:
			if b[0] < 20 || b[0] > 63 {
				t.Fatalf("DTLS with first byte %d", b[0])
			}
		case KindRTP:
			if b[0]>>6 != 2 || !parsed || (b[1] >= 192 && b[1] <= 223) {
				t.Fatalf("RTP verdict for %x", b)
			}
		case KindRTCP:
			if b[0]>>6 != 2 || b[1] < 192 || b[1] > 223 {
				t.Fatalf("RTCP verdict for %x", b)
			}
		}
	})
}
