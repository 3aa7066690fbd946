package rtpsend

import (
	"fmt"
	"testing"

	"github.com/pion/rtcp"
)

// interval is what one receiver report adds to the counters: packets
// expected and lost since the previous report.
type interval struct{ packets, lost int }

func repeat(n int, iv interval) []interval {
	out := make([]interval, n)
	for i := range out {
		out[i] = iv
	}
	return out
}

func TestCongestionRule(t *testing.T) {
	cases := []struct {
		name string
		// start is the cumulative lost count of the first report.
		start uint32
		ivs   []interval
		// skips are the indexes of the reports that must skip (report 0
		// only starts the count); hold, the reports after which the viewer
		// counts as congested (NACKs held).
		skips, hold []int
	}{
		{name: "5 % random loss, 2.5 Mbit/s", ivs: repeat(20, interval{260, 13})},
		{name: "19 % loss", ivs: repeat(20, interval{260, 49})},
		{name: "60 % loss", ivs: repeat(7, interval{260, 156}), skips: []int{2, 3, 4, 5, 6}, hold: []int{2, 3, 4, 5, 6}},
		{name: "a burst is not sustained", ivs: []interval{{0, 0}, {260, 130}, {260, 5}, {260, 130}, {260, 5}}},
		{
			name:  "a light window releases NACKs",
			ivs:   []interval{{0, 0}, {260, 130}, {260, 130}, {260, 130}, {260, 2}},
			skips: []int{2, 3}, hold: []int{2, 3},
		},
		{
			// Once congested, one heavy window skips again; a light one
			// ends that, and two are needed again.
			name:  "congested until a light window",
			ivs:   []interval{{0, 0}, {260, 130}, {260, 130}, {260, 2}, {260, 130}, {260, 130}},
			skips: []int{2, 5}, hold: []int{2, 5},
		},
		{
			// Reports more often than the window: they add up to one.
			name:  "frequent reports",
			ivs:   repeat(9, interval{30, 15}),
			skips: []int{8}, hold: []int{8},
		},
		{
			// Too few packets to judge, whatever the ratio says.
			name: "a trickle",
			ivs:  []interval{{0, 0}, {40, 40}, {0, 0}, {40, 40}, {0, 0}},
		},
		{
			// A receiver may lower its cumulative count (late
			// retransmissions); the window lost nothing, not a negative
			// amount that would hide the next window's loss.
			name:  "count lowered",
			ivs:   []interval{{0, 0}, {260, 130}, {260, -200}, {260, 130}, {260, 130}},
			skips: []int{4}, hold: []int{4},
		},
		{
			name:  "24-bit count wraps",
			start: 0xfffe00,
			ivs:   repeat(3, interval{600, 300}),
			skips: []int{2}, hold: []int{2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c congestion
			seq, lost := uint32(1000), tc.start
			var skips, hold []int
			for i, iv := range tc.ivs {
				seq += uint32(iv.packets)
				lost = (lost + uint32(iv.lost)) & 0xffffff
				skip, _ := c.observe(rtcp.ReceptionReport{LastSequenceNumber: seq, TotalLost: lost})
				if skip {
					skips = append(skips, i)
				}
				if c.congested {
					hold = append(hold, i)
				}
			}
			if fmt.Sprint(skips) != fmt.Sprint(tc.skips) || fmt.Sprint(hold) != fmt.Sprint(tc.hold) {
				t.Errorf("skips at %v, NACKs held after %v; want %v, %v", skips, hold, tc.skips, tc.hold)
			}
		})
	}

	t.Run("an old report changes nothing", func(t *testing.T) {
		var c congestion
		c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70000, TotalLost: 0})
		c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70260, TotalLost: 130})
		// Reordered on the way: it must not move the window back.
		if skip, _ := c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70100, TotalLost: 60}); skip {
			t.Fatal("an old report made a skip")
		}
		if skip, loss := c.observe(rtcp.ReceptionReport{LastSequenceNumber: 70520, TotalLost: 260}); !skip || loss != 0.5 {
			t.Errorf("second heavy window: skip %v at loss %v, want a skip at 0.5", skip, loss)
		}
	})
}
