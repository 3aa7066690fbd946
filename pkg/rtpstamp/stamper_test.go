package rtpstamp

import (
	"bytes"
	"testing"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// maxPayload is the payload budget of the test access units.
const maxPayload = 1200

// accessUnit is size bytes of coded picture at pts, cut into payloads of
// at most maxPayload bytes as a codec's Fragment leaves them: the Stamper
// reads nothing of the payloads but their number.
func accessUnit(pts int64, size int) *av.AccessUnit {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	au := &av.AccessUnit{PTS: pts, Size: size}
	for len(data) > 0 {
		n := min(len(data), maxPayload)
		au.Payloads = append(au.Payloads, data[:n:n])
		data = data[n:]
	}
	return au
}

func seqs(pkts []rtp.Packet) []uint16 {
	out := make([]uint16, len(pkts))
	for i, p := range pkts {
		out[i] = p.SequenceNumber
	}
	return out
}

func equalSeqs(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStampHeadersAndSharedPayloads(t *testing.T) {
	s := NewStamper(0xdeadbeef, 102, 1000, 5000)
	au := accessUnit(0, 4000)
	pkts := s.Stamp(nil, au, false)
	if len(pkts) != 4 {
		t.Fatalf("got %d packets, want 4", len(pkts))
	}
	for i, p := range pkts {
		want := rtp.Header{
			Version: 2, Marker: i == 3, PayloadType: 102,
			SequenceNumber: uint16(1000 + i), Timestamp: 5000, SSRC: 0xdeadbeef,
		}
		if p.Version != want.Version || p.Marker != want.Marker || p.PayloadType != want.PayloadType ||
			p.SequenceNumber != want.SequenceNumber || p.Timestamp != want.Timestamp || p.SSRC != want.SSRC {
			t.Errorf("packet %d header %+v, want %+v", i, p.Header, want)
		}
		if &p.Payload[0] != &au.Payloads[i][0] || len(p.Payload) != len(au.Payloads[i]) {
			t.Errorf("packet %d does not share payload %d of the access unit", i, i)
		}
	}
	if s.NextSeq() != 1004 || s.LastTimestamp() != 5000 {
		t.Fatalf("NextSeq %d LastTimestamp %d, want 1004 and 5000", s.NextSeq(), s.LastTimestamp())
	}
}

func TestStampSequenceContiguousAcrossSkippedAUs(t *testing.T) {
	s := NewStamper(1, 96, 10, 0)
	aus := []*av.AccessUnit{
		accessUnit(0, 4000),    // 4 packets
		accessUnit(3000, 1200), // skipped: the viewer's queue dropped it
		accessUnit(6000, 2500),
		accessUnit(9000, 100),
	}
	var got []uint16
	var pkts []rtp.Packet
	for i, au := range aus {
		if i == 1 {
			continue
		}
		pkts = s.Stamp(pkts, au, false)
		got = append(got, seqs(pkts)...)
	}
	want := []uint16{10, 11, 12, 13, 14, 15, 16, 17}
	if !equalSeqs(got, want) {
		t.Fatalf("sequence numbers %v, want %v", got, want)
	}
}

func TestStampSequenceWraps(t *testing.T) {
	s := NewStamper(1, 96, 65534, 0)
	pkts := s.Stamp(nil, accessUnit(0, 3000), false)
	if got, want := seqs(pkts), []uint16{65534, 65535, 0}; !equalSeqs(got, want) {
		t.Fatalf("sequence numbers %v, want %v", got, want)
	}
	if s.NextSeq() != 1 {
		t.Fatalf("NextSeq %d, want 1", s.NextSeq())
	}
}

func TestStampMarkerOnLastPacketOnly(t *testing.T) {
	s := NewStamper(1, 96, 0, 0)
	var pkts []rtp.Packet
	for _, au := range []*av.AccessUnit{accessUnit(0, 4000), accessUnit(1, 12), accessUnit(2, 9000)} {
		pkts = s.Stamp(pkts, au, false)
		for i, p := range pkts {
			if p.Marker != (i == len(pkts)-1) {
				t.Fatalf("PTS %d packet %d of %d: marker %v", au.PTS, i, len(pkts), p.Marker)
			}
		}
	}
}

func TestStampTimestamps(t *testing.T) {
	type step struct {
		pts     int64
		catchUp bool
		wantTS  uint32
	}
	tests := []struct {
		name      string
		initialTS uint32
		steps     []step
	}{
		{
			name:      "live follows pts from the initial timestamp",
			initialTS: 1000,
			steps:     []step{{90000, false, 1000}, {93000, false, 4000}, {99000, false, 10000}},
		},
		{
			name:      "cached gop 1 ms apart, then live at the real pts distance",
			initialTS: 1000,
			steps: []step{
				{0, true, 1000}, // the very first AU takes the initial timestamp
				{3000, true, 1090},
				{6000, true, 1180},
				{9000, false, 4180}, // 3000 after the last cached frame, as in the source
				{12000, false, 7180},
			},
		},
		{
			name:      "a later catch-up burst re-anchors again",
			initialTS: 0,
			steps:     []step{{0, false, 0}, {3000, false, 3000}, {500000, true, 3090}, {503000, false, 6090}},
		},
		{
			name:      "timestamp wraps at 2^32",
			initialTS: 0xffffff00,
			steps:     []step{{0, false, 0xffffff00}, {3000, false, 0xab8}, {6000, true, 0xb12}, {9000, false, 0x16ca}},
		},
		{
			name:      "pts past 2^32 and negative pts keep their distance",
			initialTS: 7,
			steps:     []step{{1<<33 + 5, false, 7}, {1<<33 + 3005, false, 3007}, {-3000, true, 3097}, {0, false, 6097}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStamper(1, 96, 0, tc.initialTS)
			var pkts []rtp.Packet
			for i, st := range tc.steps {
				pkts = s.Stamp(pkts, accessUnit(st.pts, 3000), st.catchUp)
				for _, p := range pkts {
					if p.Timestamp != st.wantTS {
						t.Fatalf("step %d (pts %d, catchUp %v): timestamp %#x, want %#x", i, st.pts, st.catchUp, p.Timestamp, st.wantTS)
					}
				}
				if s.LastTimestamp() != st.wantTS {
					t.Fatalf("step %d: LastTimestamp %#x, want %#x", i, s.LastTimestamp(), st.wantTS)
				}
			}
		})
	}
}

func TestStampEmptyAULeavesStateAlone(t *testing.T) {
	s := NewStamper(1, 96, 42, 777)
	if pkts := s.Stamp(make([]rtp.Packet, 3), &av.AccessUnit{PTS: 123}, true); len(pkts) != 0 {
		t.Fatalf("got %d packets for an access unit without payloads", len(pkts))
	}
	if s.NextSeq() != 42 || s.LastTimestamp() != 777 {
		t.Fatalf("state changed: NextSeq %d LastTimestamp %d", s.NextSeq(), s.LastTimestamp())
	}
	// The next real AU is still the first one: it takes the initial timestamp.
	pkts := s.Stamp(nil, accessUnit(50000, 12), false)
	if pkts[0].Timestamp != 777 || pkts[0].SequenceNumber != 42 {
		t.Fatalf("first packet ts %d seq %d, want 777 and 42", pkts[0].Timestamp, pkts[0].SequenceNumber)
	}
}

func TestStampReusesAndClearsDst(t *testing.T) {
	s := NewStamper(1, 96, 0, 0)
	dst := make([]rtp.Packet, 8)
	dst[0].CSRC = []uint32{9}
	dst[0].Extension = true
	dst[0].Padding = true
	dst[0].PaddingSize = 4
	got := s.Stamp(dst, accessUnit(0, 3000), false)
	if &got[0] != &dst[0] {
		t.Fatal("Stamp reallocated although dst had room")
	}
	if got[0].CSRC != nil || got[0].Extension || got[0].Padding || got[0].PaddingSize != 0 {
		t.Fatalf("stale header fields survived: %+v", got[0].Header)
	}
	grown := s.Stamp(got[:1], accessUnit(3000, 13000), false)
	if len(grown) != 11 {
		t.Fatalf("got %d packets, want 11", len(grown))
	}
}

func TestStampDoesNotAllocate(t *testing.T) {
	s := NewStamper(1, 96, 0, 0)
	au := accessUnit(0, 60018)
	dst := s.Stamp(nil, au, false)
	allocs := testing.AllocsPerRun(100, func() {
		au.PTS += 3000
		dst = s.Stamp(dst, au, false)
	})
	if allocs != 0 {
		t.Fatalf("Stamp made %.1f allocations per access unit in steady state, want 0", allocs)
	}
}

func TestMarshalMatchesPion(t *testing.T) {
	headers := []rtp.Header{
		{Version: 2, PayloadType: 96, SequenceNumber: 0, Timestamp: 0, SSRC: 0},
		{Version: 2, Marker: true, PayloadType: 127, SequenceNumber: 65535, Timestamp: 0xffffffff, SSRC: 0x01020304},
		{Version: 2, Marker: false, PayloadType: 102, SequenceNumber: 4242, Timestamp: 90000, SSRC: 0xdeadbeef},
	}
	payload := accessUnit(0, 40).Payloads[0]
	for _, h := range headers {
		pkt := rtp.Packet{Header: h, Payload: payload}
		want, err := pkt.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1500)
		if n := MarshalHeader(buf, &pkt.Header); n != HeaderLen || !bytes.Equal(buf[:n], want[:HeaderLen]) {
			t.Errorf("MarshalHeader(%+v) = % x (n %d), want % x", h, buf[:HeaderLen], n, want[:HeaderLen])
		}
		if n := MarshalTo(buf, &pkt); !bytes.Equal(buf[:n], want) {
			t.Errorf("MarshalTo(%+v) = % x, want % x", h, head(buf[:n]), head(want))
		}
	}
	short := make([]byte, HeaderLen+len(payload)-1)
	if MarshalHeader(short[:HeaderLen-1], &headers[0]) != 0 || MarshalTo(short, &rtp.Packet{Header: headers[0], Payload: payload}) != 0 {
		t.Error("marshal into a short buffer did not report 0")
	}
}

func head(b []byte) []byte { return b[:min(len(b), 24)] }
