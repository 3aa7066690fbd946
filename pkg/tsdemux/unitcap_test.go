package tsdemux

import (
	"bytes"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// endlessPES is what a hostile publisher sends after valid tables: TS
// packets on the video PID that never start a new unit, continuity
// counters correct, n bytes in all. Every sampleEvery bytes it records the
// live heap after a GC, so the test sees what the demuxer holds while the
// unit keeps growing.
type endlessPES struct {
	pid         uint16
	cc          uint8
	left        int
	sampleEvery int
	sinceSample int
	peak        uint64
	pkt         [tsPacketSize]byte
}

func (e *endlessPES) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for len(p)-n >= tsPacketSize && e.left > 0 {
		e.cc = (e.cc + 1) & 0x0f
		e.pkt[0] = tsSync
		e.pkt[1] = byte(e.pid >> 8 & 0x1f) // no PUSI
		e.pkt[2] = byte(e.pid)
		e.pkt[3] = 0x10 | e.cc // payload only
		for i := 4; i < tsPacketSize; i++ {
			e.pkt[i] = 0x55
		}
		n += copy(p[n:], e.pkt[:])
		e.left -= tsPacketSize
		e.sinceSample += tsPacketSize
	}
	if e.sinceSample >= e.sampleEvery {
		e.sinceSample = 0
		e.peak = max(e.peak, liveHeap())
	}
	return n, nil
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// lastCC is the continuity counter of the last packet on pid in ts.
func lastCC(ts []byte, pid uint16) uint8 {
	var cc uint8
	for i := 0; i+tsPacketSize <= len(ts); i += tsPacketSize {
		if uint16(ts[i+1]&0x1f)<<8|uint16(ts[i+2]) == pid {
			cc = ts[i+3] & 0x0f
		}
	}
	return cc
}

// TestEndlessPESBounded sends valid tables and two GOPs, then 64 MiB on
// the video PID without a unit start, then another GOP: what the demuxer
// holds stays near the cap, the warning names the setting once, no
// truncated unit comes out, and the stream goes on at the next IDR.
func TestEndlessPESBounded(t *testing.T) {
	const capBytes = 1 << 20
	b := newTSBuilder(t, false)
	pts := b.gop(90000, 5, true)
	pts = b.gop(pts, 5, true)
	head := bytes.Clone(b.bytes())
	b.buf.Reset()
	b.gop(pts, 5, true)
	tail := bytes.Clone(b.bytes())

	endless := &endlessPES{pid: b.video.PID, cc: lastCC(head, b.video.PID), left: 64 << 20, sampleEvery: 4 << 20}
	before := liveHeap()
	res := demux(t, io.MultiReader(bytes.NewReader(head), endless, bytes.NewReader(tail)),
		func(d *Demuxer) { d.maxUnit = capBytes })
	if res.err != nil {
		t.Fatal(res.err)
	}
	growth := int64(endless.peak) - int64(before)
	t.Logf("64 MiB endless PES at a %d-byte cap: live heap %d → peak %d bytes (growth %d); %d units capped",
		capBytes, before, endless.peak, growth, res.stats.UnitsCapped)
	// Without the cap astits keeps every packet: over 64 MiB.
	if growth > 4*capBytes {
		t.Errorf("live heap grew by %d bytes while the unit grew, want at most %d", growth, 4*capBytes)
	}
	if res.stats.UnitsCapped != 1 {
		t.Errorf("UnitsCapped = %d, want 1 (one endless unit)", res.stats.UnitsCapped)
	}
	// The endless packets continue the last PES of the head, so that
	// picture is lost; the third GOP's IDR ends the drop.
	if len(res.aus) != 14 {
		t.Errorf("%d access units, want 14: three GOPs of 5 but the picture the endless unit grew from", len(res.aus))
	}
	for i, au := range res.aus {
		if au.Size > 1000 {
			t.Errorf("AU %d has %d bytes: a truncated endless unit came out", i, au.Size)
		}
	}
	var warned int
	for _, l := range res.logs.level(slog.LevelWarn) {
		if strings.Contains(l, "maxUnitBytes") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings naming maxUnitBytes, want 1: %q", warned, res.logs.level(slog.LevelWarn))
	}
}

// TestUnitCapKeepsLargePictures: a 3 MiB IDR (larger than any real 4K IDR)
// passes the default cap whole, and the next GOP follows.
func TestUnitCapKeepsLargePictures(t *testing.T) {
	b := newTSBuilder(t, false)
	big := append(slice(true, 3, sliceI, 0), bytes.Repeat([]byte{0x55}, 3<<20)...)
	b.au(90000, 90000, testSPS, testPPS, big)
	b.gop(93000, 3, true)
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 4 || res.aus[0].NALUs[2] == nil || len(res.aus[0].NALUs[2]) != len(big) {
		t.Fatalf("got %d AUs; want the 3 MiB IDR whole and the next GOP", len(res.aus))
	}
	if res.stats.UnitsCapped != 0 {
		t.Errorf("UnitsCapped = %d, want 0", res.stats.UnitsCapped)
	}
}

// TestUnitCapEveryCounterPhase drops 16 different lengths past the cap, so
// the unit start that ends the drop meets every counter value, including
// the one that would look continuous to the TS library.
func TestUnitCapEveryCounterPhase(t *testing.T) {
	const capBytes = 64 << 10
	for extra := range 16 {
		b := newTSBuilder(t, false)
		pts := b.gop(90000, 3, true)
		head := bytes.Clone(b.bytes())
		b.buf.Reset()
		b.gop(pts, 3, true)
		tail := bytes.Clone(b.bytes())
		cc := lastCC(head, b.video.PID)
		// Set the tail's counters to continue the endless packets, so
		// only the filter's jump can make the library drop what it held.
		n := (capBytes/184 + 2 + extra) * tsPacketSize
		endless := &endlessPES{pid: b.video.PID, cc: cc, left: n, sampleEvery: n + 1}
		next := (cc + uint8(n/tsPacketSize) + 1) & 0x0f
		for i := 0; i+tsPacketSize <= len(tail); i += tsPacketSize {
			if uint16(tail[i+1]&0x1f)<<8|uint16(tail[i+2]) == b.video.PID {
				tail[i+3] = tail[i+3]&0xf0 | next
				next = (next + 1) & 0x0f
			}
		}
		res := demux(t, io.MultiReader(bytes.NewReader(head), endless, bytes.NewReader(tail)),
			func(d *Demuxer) { d.maxUnit = capBytes })
		if res.err != nil || len(res.aus) != 5 || res.stats.UnitsCapped != 1 {
			t.Fatalf("extra %d: err %v, %d AUs (want 5: the grown one is lost), %d capped (want 1)", extra, res.err, len(res.aus), res.stats.UnitsCapped)
		}
		// The demuxer would drop a truncated unit too (it skips to the
		// IDR), so what shows the library dropped it is that it never
		// arrived to be counted.
		if res.stats.DroppedAUs != 0 {
			t.Fatalf("extra %d: %d access units reached the demuxer and were dropped; want the grown unit discarded by the TS library", extra, res.stats.DroppedAUs)
		}
		for i, au := range res.aus {
			if au.Size > 1000 {
				t.Fatalf("extra %d: AU %d has %d bytes: a truncated unit came out", extra, i, au.Size)
			}
		}
	}
}
