package rtph264

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/pion/rtp/codecs"
)

// nal returns a NAL unit of size bytes with the given header byte and a body
// pattern that never contains an Annex-B start code.
func nal(header byte, size int) []byte {
	b := make([]byte, size)
	b[0] = header
	for i := 1; i < size; i++ {
		b[i] = byte(i%250) + 1
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	sps      = []byte{0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9, 0x40, 0x50, 0x05, 0xbb, 0x01, 0x10}
	pps      = []byte{0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0}
	sei      = []byte{0x06, 0x05, 0x03, 0xaa, 0xbb, 0xcc, 0x80}
	smallIDR = nal(0x65, 40)
	bigIDR   = nal(0x65, 3000)
	pSlice   = nal(0x41, 1200)
	stapA600 = nal(0x41, 600)
	stapA594 = nal(0x21, 594)
	oneByte  = []byte{0x09} // an access unit delimiter with its payload cut off
)

// cases drives the golden test, the depacketizer round trip and the fuzz
// seeds, so all three always agree on what a correct cut is.
var cases = []struct {
	name       string
	nalus      [][]byte
	maxPayload int
	payloads   [][]byte
	// pionDropsF marks a case whose FU-A carries the forbidden bit, which
	// pion does not restore when it rebuilds the NAL.
	pionDropsF bool
}{
	{
		name:       "sps pps small idr aggregate into one stap-a",
		nalus:      [][]byte{sps, pps, smallIDR},
		maxPayload: DefaultMaxPayload,
		payloads: [][]byte{cat(
			[]byte{0x78}, // NRI 3 (the highest), type 24
			[]byte{0, 12}, sps,
			[]byte{0, 6}, pps,
			[]byte{0, 40}, smallIDR,
		)},
	},
	{
		name:       "3000-byte idr becomes three fu-a fragments",
		nalus:      [][]byte{bigIDR},
		maxPayload: DefaultMaxPayload,
		payloads: [][]byte{
			cat([]byte{0x7c, 0x85}, bigIDR[1:1199]),    // NRI 3, type 28; S, type 5
			cat([]byte{0x7c, 0x05}, bigIDR[1199:2397]), // middle: no S, no E
			cat([]byte{0x7c, 0x45}, bigIDR[2397:]),     // E, 603 bytes left
		},
	},
	{
		name:       "nal of exactly maxPayload goes alone",
		nalus:      [][]byte{pSlice},
		maxPayload: DefaultMaxPayload,
		payloads:   [][]byte{pSlice},
	},
	{
		name:       "parameter sets and sei aggregate, big idr fragments",
		nalus:      [][]byte{sps, pps, sei, bigIDR},
		maxPayload: DefaultMaxPayload,
		payloads: [][]byte{
			cat([]byte{0x78}, []byte{0, 12}, sps, []byte{0, 6}, pps, []byte{0, 7}, sei),
			cat([]byte{0x7c, 0x85}, bigIDR[1:1199]),
			cat([]byte{0x7c, 0x05}, bigIDR[1199:2397]),
			cat([]byte{0x7c, 0x45}, bigIDR[2397:]),
		},
	},
	{
		name:       "stap-a filled to exactly maxPayload, next nal starts a new packet",
		nalus:      [][]byte{stapA600, stapA594, oneByte, sps},
		maxPayload: 1199,
		payloads: [][]byte{
			cat([]byte{0x58}, []byte{0x02, 0x58}, stapA600, []byte{0x02, 0x52}, stapA594), // NRI 2 is the max
			cat([]byte{0x78}, []byte{0, 1}, oneByte, []byte{0, 12}, sps),
		},
	},
	{
		name:       "small nal between two big ones goes alone",
		nalus:      [][]byte{nal(0x41, 10), nal(0x01, 2), nal(0x41, 7)},
		maxPayload: 5,
		payloads: [][]byte{
			cat([]byte{0x5c, 0x81}, nal(0x41, 10)[1:4]),
			cat([]byte{0x5c, 0x01}, nal(0x41, 10)[4:7]),
			cat([]byte{0x5c, 0x41}, nal(0x41, 10)[7:10]),
			nal(0x01, 2),
			cat([]byte{0x5c, 0x81}, nal(0x41, 7)[1:4]),
			cat([]byte{0x5c, 0x41}, nal(0x41, 7)[4:7]),
		},
	},
	{
		name:       "forbidden bit survives in stap-a header",
		nalus:      [][]byte{{0x86, 0x01}, {0x21, 0x02}},
		maxPayload: DefaultMaxPayload,
		payloads:   [][]byte{{0xb8, 0, 2, 0x86, 0x01, 0, 2, 0x21, 0x02}},
	},
	{
		name:       "forbidden bit and nri travel in the fu indicator",
		nalus:      [][]byte{{0xa5, 1, 2, 3, 4, 5}},
		maxPayload: 4,
		payloads:   [][]byte{{0xbc, 0x85, 1, 2}, {0xbc, 0x05, 3, 4}, {0xbc, 0x45, 5}},
		pionDropsF: true,
	},
	{
		name:       "empty and unspecified-type nals are dropped",
		nalus:      [][]byte{{}, {0x60, 1}, sps, {0x78, 0, 1, 0x09}, {0x7c, 0x85, 1}, pps, {0x1f}},
		maxPayload: DefaultMaxPayload,
		payloads:   [][]byte{cat([]byte{0x78}, []byte{0, 12}, sps, []byte{0, 6}, pps)},
	},
	{
		name:       "nothing sendable",
		nalus:      [][]byte{{}, {0x00}},
		maxPayload: DefaultMaxPayload,
		payloads:   nil,
	},
}

func TestFragmentGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Fragment(tc.nalus, tc.maxPayload)
			if len(got) != len(tc.payloads) {
				t.Fatalf("got %d payloads, want %d", len(got), len(tc.payloads))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.payloads[i]) {
					t.Errorf("payload %d:\n got % x\nwant % x", i, head(got[i]), head(tc.payloads[i]))
				}
			}
			checkPayloads(t, got, tc.maxPayload)
		})
	}
}

func head(b []byte) []byte { return b[:min(len(b), 24)] }

// checkPayloads asserts the size limit and that no payload can reach into
// another one's bytes through its capacity.
func checkPayloads(t *testing.T, payloads [][]byte, maxPayload int) {
	t.Helper()
	for i, p := range payloads {
		if len(p) == 0 || len(p) > maxPayload {
			t.Errorf("payload %d has %d bytes, want 1..%d", i, len(p), maxPayload)
		}
		if cap(p) != len(p) {
			t.Errorf("payload %d has cap %d > len %d: an append would overwrite its neighbour", i, cap(p), len(p))
		}
	}
}

// depacketize feeds payloads through pion's H.264 depacketizer, as a
// receiving peer would, and returns the Annex-B stream it rebuilds.
func depacketize(t testing.TB, payloads [][]byte) []byte {
	t.Helper()
	var d codecs.H264Packet // IsAVC false: Annex-B out
	var out []byte
	for i, p := range payloads {
		b, err := d.Unmarshal(p)
		if err != nil {
			t.Fatalf("pion rejects payload %d (% x): %v", i, head(p), err)
		}
		out = append(out, b...)
	}
	return out
}

// annexB is what a receiver must rebuild from our payloads: every sendable
// NAL behind a 4-byte start code, with the forbidden bit cleared when
// withoutF is set.
func annexB(nalus [][]byte, withoutF bool) []byte {
	var out []byte
	for _, n := range nalus {
		if !sendable(n) {
			continue
		}
		out = append(out, 0, 0, 0, 1)
		start := len(out)
		out = append(out, n...)
		if withoutF {
			out[start] &^= 0x80
		}
	}
	return out
}

func TestFragmentRoundTrip(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := depacketize(t, Fragment(tc.nalus, tc.maxPayload))
			if want := annexB(tc.nalus, tc.pionDropsF); !bytes.Equal(got, want) {
				t.Fatalf("round trip differs:\n got % x\nwant % x", head(got), head(want))
			}
		})
	}
}

func TestFragmentDoesNotModifyInput(t *testing.T) {
	in := [][]byte{sps, pps, sei, bigIDR, pSlice}
	before := make([][]byte, len(in))
	for i, n := range in {
		before[i] = bytes.Clone(n)
	}
	out := Fragment(in, DefaultMaxPayload)
	for _, p := range out {
		for i := range p {
			p[i] ^= 0xff
		}
	}
	for i := range in {
		if !bytes.Equal(in[i], before[i]) {
			t.Fatalf("nal %d changed by Fragment or through its payloads", i)
		}
	}
}

func TestFragmentMaxPayloadDefaults(t *testing.T) {
	for _, mp := range []int{0, -5} {
		got := Fragment([][]byte{bigIDR}, mp)
		want := Fragment([][]byte{bigIDR}, DefaultMaxPayload)
		if len(got) != len(want) || !bytes.Equal(got[0], want[0]) {
			t.Errorf("maxPayload %d: got %d payloads, want the %d of DefaultMaxPayload", mp, len(got), len(want))
		}
	}
	for _, mp := range []int{1, 2} {
		got := Fragment([][]byte{nal(0x41, 6)}, mp)
		checkPayloads(t, got, MinMaxPayload)
		if len(got) != 5 {
			t.Errorf("maxPayload %d: got %d payloads, want 5 one-byte fragments", mp, len(got))
		}
	}
}

func TestFragmentNALTooBigForStapA(t *testing.T) {
	// A STAP-A size field has 16 bits, so a 70000-byte NAL must go alone even
	// when maxPayload would allow aggregating it.
	big := nal(0x41, 70000)
	got := Fragment([][]byte{sps, big, pps}, 200000)
	if len(got) != 3 || !bytes.Equal(got[0], sps) || !bytes.Equal(got[1], big) || !bytes.Equal(got[2], pps) {
		t.Fatalf("got %d payloads, want sps, the big NAL and pps each alone", len(got))
	}
}

func TestFragmentOneBackingBuffer(t *testing.T) {
	allocs := testing.AllocsPerRun(20, func() { Fragment([][]byte{sps, pps, bigIDR}, DefaultMaxPayload) })
	if allocs > 2 {
		t.Fatalf("Fragment made %.0f allocations per access unit, want at most 2 (bytes + slice headers)", allocs)
	}
}

// encodeNALUs packs NAL units as 16-bit length + bytes, the fuzz input shape.
func encodeNALUs(nalus [][]byte) []byte {
	var b []byte
	for _, n := range nalus {
		b = binary.BigEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
	}
	return b
}

func decodeNALUs(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 2 {
		n := min(int(binary.BigEndian.Uint16(b)), len(b)-2)
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out
}

func FuzzFragment(f *testing.F) {
	for _, tc := range cases {
		f.Add(encodeNALUs(tc.nalus), tc.maxPayload)
	}
	f.Fuzz(func(t *testing.T, blob []byte, maxPayload int) {
		if maxPayload < MinMaxPayload || maxPayload > 70000 {
			maxPayload = MinMaxPayload + int(uint(maxPayload)%4000)
		}
		nalus := decodeNALUs(bytes.Clone(blob))
		// pion rebuilds an FU-A NAL header from NRI and type only, dropping
		// F; the golden table checks that we do send F.
		for _, n := range nalus {
			if len(n) > 0 {
				n[0] &^= 0x80
			}
		}
		before := make([][]byte, len(nalus))
		for i, n := range nalus {
			before[i] = bytes.Clone(n)
		}

		payloads := Fragment(nalus, maxPayload)
		checkPayloads(t, payloads, maxPayload)
		for i := range nalus {
			if !bytes.Equal(nalus[i], before[i]) {
				t.Fatalf("Fragment modified NAL %d", i)
			}
		}
		if got, want := depacketize(t, payloads), annexB(nalus, false); !bytes.Equal(got, want) {
			t.Fatalf("round trip differs (%d NALs, max %d):\n got % x\nwant % x", len(nalus), maxPayload, head(got), head(want))
		}
	})
}
