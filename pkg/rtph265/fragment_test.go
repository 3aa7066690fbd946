package rtph265

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/rtp/codecs"
)

// nalu is an H.265 NAL unit of type typ, layer 0, TID 1, with n bytes in
// all; its body never ends in a zero byte, so Annex-B splitting gives it
// back exactly.
func nalu(typ byte, n int, seed uint64) []byte {
	b := make([]byte, n)
	b[0], b[1] = typ<<1, 1
	r := rand.New(rand.NewPCG(seed, uint64(typ)))
	for i := 2; i < n; i++ {
		b[i] = byte(r.IntN(255) + 1) // no zeros: no start-code look-alikes either
	}
	return b
}

// depacketize runs payloads through pion's H.265 depacketizer, as a
// receiver does, and returns the NAL units it rebuilt.
func depacketize(t *testing.T, payloads [][]byte) [][]byte {
	t.Helper()
	var d codecs.H265Depacketizer
	var annexB []byte
	for i, p := range payloads {
		out, err := d.Unmarshal(p)
		if err != nil {
			t.Fatalf("payload %d (% x…): %v", i, p[:min(len(p), 4)], err)
		}
		annexB = append(annexB, out...)
	}
	if len(annexB) == 0 {
		return nil
	}
	var au h264.AnnexB
	if err := au.Unmarshal(annexB); err != nil {
		t.Fatalf("pion's output is not Annex-B: %v", err)
	}
	return au
}

// The cases: what an encoder puts into an access unit, and which packet
// types RFC 7798 has them go in.
var cases = []struct {
	name       string
	nalus      [][]byte
	maxPayload int
	want       string // packet types in order: S single, A aggregation, F fragment
}{
	{"parameter sets and a small IRAP", [][]byte{nalu(32, 24, 1), nalu(33, 40, 2), nalu(34, 8, 3), nalu(19, 900, 4)}, 1200, "A"},
	{"parameter sets and a large IRAP", [][]byte{nalu(32, 24, 1), nalu(33, 40, 2), nalu(34, 8, 3), nalu(19, 5000, 4)}, 1200, "AFFFFF"},
	{"one trailing picture", [][]byte{nalu(1, 700, 5)}, 1200, "S"},
	{"picture of exactly the budget", [][]byte{nalu(1, 1200, 6)}, 1200, "S"},
	{"one byte over the budget", [][]byte{nalu(1, 1201, 7)}, 1200, "FF"},
	{"CRA with SEI", [][]byte{nalu(39, 30, 8), nalu(21, 3000, 9)}, 1200, "SFFF"},
	{"two slices that fit one AP", [][]byte{nalu(1, 500, 10), nalu(1, 500, 11)}, 1200, "A"},
	{"two slices that do not", [][]byte{nalu(1, 700, 12), nalu(1, 700, 13)}, 1200, "SS"},
	{"the smallest budget", [][]byte{nalu(1, 9, 14)}, 1, "FFFFFFF"},
}

func kinds(payloads [][]byte) string {
	var s []byte
	for _, p := range payloads {
		switch naluType(p) {
		case typeAP:
			s = append(s, 'A')
		case typeFU:
			s = append(s, 'F')
		default:
			s = append(s, 'S')
		}
	}
	return string(s)
}

// TestFragmentRoundTrip: every case's payloads, read back by pion's
// depacketizer, are the same NAL units in the same order, in the packet
// types RFC 7798 prescribes, none over the budget.
func TestFragmentRoundTrip(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := cloneAll(c.nalus)
			payloads := Fragment(c.nalus, c.maxPayload)
			if got := kinds(payloads); got != c.want {
				t.Errorf("packet types %s, want %s", got, c.want)
			}
			budget := max(c.maxPayload, MinMaxPayload)
			for i, p := range payloads {
				if len(p) > budget || cap(p) != len(p) {
					t.Errorf("payload %d: %d bytes (cap %d), budget %d", i, len(p), cap(p), budget)
				}
			}
			got := depacketize(t, payloads)
			if !equalAll(got, c.nalus) {
				t.Fatalf("depacketized %d NAL units %v, want %d %v", len(got), sizes(got), len(c.nalus), sizes(c.nalus))
			}
			if !equalAll(c.nalus, in) {
				t.Error("Fragment modified its input")
			}
		})
	}
}

// TestFragmentHeaders: the AP and FU payload headers carry what RFC 7798
// §4.4.2 and §4.4.3 say: the lowest LayerId and TID for an AP; the NAL
// unit's own LayerId and TID, and its type in the FU header.
func TestFragmentHeaders(t *testing.T) {
	a, b := nalu(33, 20, 1), nalu(34, 10, 2)
	a[1] = 2<<3 | 3 // LayerId 2, TID 3
	b[0] |= 1       // LayerId high bit: 32
	b[1] = 1<<3 | 2 // LayerId 33, TID 2
	ap := Fragment([][]byte{a, b}, 1200)
	if len(ap) != 1 || ap[0][0] != typeAP<<1 || ap[0][1] != 2<<3|2 {
		t.Errorf("AP header % x, want %02x 12", ap[0][:2], typeAP<<1)
	}
	big := nalu(20, 3000, 3)
	big[0] |= 1 // LayerId 32
	big[1] = 5  // TID 5
	fus := Fragment([][]byte{big}, 1000)
	for i, p := range fus {
		wantS, wantE := byte(0), byte(0)
		if i == 0 {
			wantS = 0x80
		}
		if i == len(fus)-1 {
			wantE = 0x40
		}
		if p[0] != typeFU<<1|1 || p[1] != 5 || p[2] != wantS|wantE|20 {
			t.Errorf("FU %d header % x, want %02x 05 %02x", i, p[:3], typeFU<<1|1, wantS|wantE|20)
		}
	}
}

// TestFragmentDrops: NAL units RFC 7798 cannot carry as they are (no
// body, forbidden_zero_bit set, or types 48-63) are left out; an access unit of nothing else
// gives nil.
func TestFragmentDrops(t *testing.T) {
	forbidden := nalu(1, 10, 0)
	forbidden[0] |= 0x80
	bad := [][]byte{{}, {0x02}, nalu(36, 2, 0), forbidden, nalu(48, 10, 1), nalu(49, 10, 2), nalu(50, 10, 3), nalu(63, 10, 4)}
	if p := Fragment(bad, 1200); p != nil {
		t.Fatalf("got %d payloads from unsendable NAL units, want nil", len(p))
	}
	good := nalu(1, 100, 5)
	p := Fragment(append(bad, good), 1200)
	if len(p) != 1 || !bytes.Equal(p[0], good) {
		t.Fatalf("got %d payloads, want the one good NAL unit alone", len(p))
	}
}

// TestFragmentMTU: over a range of budgets and picture sizes no payload
// exceeds the budget and everything round-trips.
func TestFragmentMTU(t *testing.T) {
	for _, budget := range []int{MinMaxPayload, 5, 17, 100, 576, 1200, 1400} {
		for _, n := range []int{3, 4, budget - 1, budget, budget + 1, 3 * budget, 10000} {
			if n < 3 {
				continue
			}
			au := [][]byte{nalu(32, 23, 1), nalu(33, 41, 2), nalu(34, 7, 3), nalu(19, n, uint64(n))}
			payloads := Fragment(au, budget)
			for i, p := range payloads {
				if len(p) > budget {
					t.Fatalf("budget %d, NAL %d: payload %d has %d bytes", budget, n, i, len(p))
				}
			}
			if got := depacketize(t, payloads); !equalAll(got, au) {
				t.Fatalf("budget %d, NAL %d: round trip gave %v, want %v", budget, n, sizes(got), sizes(au))
			}
		}
	}
}

// FuzzFragment: any NAL units and budget give payloads within the budget
// that pion reads back as the sendable NAL units, in order.
func FuzzFragment(f *testing.F) {
	for _, c := range cases {
		f.Add(bytes.Join(c.nalus, []byte{0, 0, 1}), c.maxPayload)
	}
	f.Fuzz(func(t *testing.T, data []byte, budget int) {
		budget = budget%3000 + 1
		if budget < 1 {
			budget = -budget + 1
		}
		var in [][]byte
		for _, n := range bytes.Split(data, []byte{0, 0, 1}) {
			// Annex-B cannot give back a trailing zero, nor a
			// start code a NAL unit happens to contain.
			n = bytes.TrimRight(n, "\x00")
			if len(n) > 0 && !bytes.Contains(n, []byte{0, 0}) {
				in = append(in, n)
			}
		}
		payloads := Fragment(in, budget)
		var want [][]byte
		for _, n := range in {
			if sendable(n) {
				want = append(want, n)
			}
		}
		for i, p := range payloads {
			if len(p) > max(budget, MinMaxPayload) {
				t.Fatalf("payload %d: %d bytes over budget %d", i, len(p), budget)
			}
		}
		if got := depacketize(t, payloads); !equalAll(got, want) {
			t.Fatalf("round trip gave %v, want %v", sizes(got), sizes(want))
		}
	})
}

func equalAll(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func cloneAll(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, n := range in {
		out[i] = bytes.Clone(n)
	}
	return out
}

func sizes(nalus [][]byte) string {
	s := ""
	for _, n := range nalus {
		s += fmt.Sprintf(" %d", len(n))
	}
	return "[" + s + " ]"
}
