package tsdemux

import (
	"bytes"
	"strings"
	"testing"
)

// dropOnePacket removes the second TS packet of the nth video PES (PID
// 256), as a lost SRT packet would.
func dropOnePacket(clip []byte, nth int) []byte {
	var out []byte
	starts, dropped := 0, false
	for off := 0; off+188 <= len(clip); off += 188 {
		p := clip[off : off+188]
		pid := int(p[1]&0x1f)<<8 | int(p[2])
		if pid == 256 && p[1]&0x40 != 0 {
			starts++
		}
		if pid == 256 && starts == nth && p[1]&0x40 == 0 && !dropped {
			dropped = true
			continue
		}
		out = append(out, p...)
	}
	return out
}

// TestSkipReported: the consumer hears of a skip when it starts (to blame
// its transport or not) and when it ends (how many pictures it cost), and
// the pictures it blamed are counted apart; the wait for the first IDR is
// no skip.
func TestSkipReported(t *testing.T) {
	clip := dropOnePacket(readClip(t, "h264.ts"), 10)
	for _, blame := range []bool{true, false} {
		var causes []string
		var skips []Skip
		res := demux(t, bytes.NewReader(clip), func(d *Demuxer) {
			d.onSkip = func(err error) bool {
				causes = append(causes, err.Error())
				return blame
			}
			d.onSkipped = func(s Skip) { skips = append(skips, s) }
		})
		if res.err != nil {
			t.Fatal(res.err)
		}
		if len(causes) != 1 || !strings.Contains(causes[0], "frame_num") {
			t.Fatalf("blame %v: OnSkip causes %q, want one frame_num gap", blame, causes)
		}
		if len(skips) != 1 || skips[0].Frames != 20 || skips[0].TransportLoss != blame || skips[0].Cause == nil {
			t.Fatalf("blame %v: OnSkipped %+v, want one skip of 20 frames", blame, skips)
		}
		want := uint64(0)
		if blame {
			want = 20
		}
		if res.stats.DroppedAUs != 20 || res.stats.DroppedTransport != want {
			t.Errorf("blame %v: stats %+v, want 20 dropped, %d of them blamed on the transport", blame, res.stats, want)
		}
	}
}

// TestArrivalStamped: every access unit carries the time it was complete,
// which the WHEP side measures the server's share of the delay from.
func TestArrivalStamped(t *testing.T) {
	res := demux(t, bytes.NewReader(readClip(t, "h264.ts")))
	if len(res.aus) == 0 {
		t.Fatal("no access units")
	}
	for i, au := range res.aus {
		if au.Arrival.IsZero() {
			t.Fatalf("AU %d has no arrival time", i)
		}
		if i > 0 && au.Arrival.Before(res.aus[i-1].Arrival) {
			t.Fatalf("AU %d arrived before AU %d", i, i-1)
		}
	}
}
