package rtpseq

import "testing"

func TestWindow(t *testing.T) {
	type step struct {
		seq  uint16
		want Result
		ext  uint64 // Extended after the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order across the wrap", []step{{65534, Result{}, 65534}, {65535, Result{}, 65535}, {0, Result{}, 1 << 16}, {1, Result{}, 1<<16 + 1}}},
		{"gap across the wrap", []step{{65534, Result{}, 65534}, {2, Result{Missing: 3}, 1<<16 + 2}}},
		{"late across the wrap fills its gap", []step{{65533, Result{}, 65533}, {1, Result{Missing: 3}, 1<<16 + 1},
			{65535, Result{Late: true, Recovered: true}, 1<<16 + 1}, {0, Result{Late: true, Recovered: true}, 1<<16 + 1}}},
		{"reordering fills a gap", []step{{10, Result{}, 10}, {12, Result{Missing: 1}, 12}, {11, Result{Late: true, Recovered: true}, 12}, {13, Result{}, 13}}},
		{"duplicates", []step{{10, Result{}, 10}, {11, Result{}, 11}, {11, Result{Dup: true}, 11}, {10, Result{Dup: true}, 11}}},
		{"a filled gap arrives again", []step{{10, Result{}, 10}, {12, Result{Missing: 1}, 12}, {11, Result{Late: true, Recovered: true}, 12}, {11, Result{Dup: true}, 12}}},
		{"before the first packet is never a recovery", []step{{100, Result{}, 100}, {99, Result{Dup: true}, 100}, {50, Result{Dup: true}, 100}}},
		{"too old to know", []step{{0, Result{}, 0}, {200, Result{Missing: 199}, 200}, {50, Result{Late: true}, 200}}},
		{"the window slides past a gap", []step{{0, Result{}, 0}, {2, Result{Missing: 1}, 2}, {70, Result{Missing: 67}, 70}, {1, Result{Late: true}, 70}}},
		{"two wraps", []step{{65000, Result{}, 65000}, {100, Result{Missing: 635}, 1<<16 + 100}, {32000, Result{Missing: 31899}, 1<<16 + 32000},
			{64000, Result{Missing: 31999}, 1<<16 + 64000}, {5, Result{Missing: 1540}, 2<<16 + 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w Window
			for i, s := range tc.steps {
				got := w.Push(s.seq)
				if got != s.want || w.Extended() != s.ext {
					t.Fatalf("step %d seq %d: %+v, extended %d; want %+v, %d", i, s.seq, got, w.Extended(), s.want, s.ext)
				}
			}
		})
	}
}

func TestDelta(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want int
	}{
		{Result{}, 0}, {Result{Missing: 3}, 3}, {Result{Late: true, Recovered: true}, -1}, {Result{Late: true}, 0}, {Result{Dup: true}, 0},
	} {
		if got := tc.r.Delta(); got != tc.want {
			t.Errorf("%+v.Delta() = %d, want %d", tc.r, got, tc.want)
		}
	}
}

func TestHas(t *testing.T) {
	var w Window
	if _, in := w.Has(5); in {
		t.Fatal("an empty window holds 5")
	}
	for _, seq := range []uint16{65530, 65533, 2} { // 65531, 65532, 65534..1 missing
		w.Push(seq)
	}
	for _, tc := range []struct {
		seq             uint16
		arrived, inside bool
	}{
		{2, true, true}, {65533, true, true}, {65535, false, true}, {0, false, true}, {65531, false, true}, {65530, true, true},
		{3, false, false},                          // ahead of the highest
		{65474, false, false}, {65475, true, true}, // 64 and 63 back: past the edge, and on it (before the first packet: seen)
	} {
		if arrived, inside := w.Has(tc.seq); arrived != tc.arrived || inside != tc.inside {
			t.Errorf("Has(%d) = %v, %v; want %v, %v", tc.seq, arrived, inside, tc.arrived, tc.inside)
		}
	}
}
