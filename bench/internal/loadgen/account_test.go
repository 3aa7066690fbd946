package loadgen

import "testing"

func TestAccountantCountsAndSwallows(t *testing.T) {
	var c counters
	light := accountant{c: &c, swallow: true}
	pkts := [][]byte{
		rtpPacket(false, 102, 10, 1000, 7, 1000),
		rtpPacket(true, 102, 11, 1000, 7, 500),
		rtpPacket(true, 102, 14, 4000, 7, 500), // 12 and 13 lost
	}
	for _, p := range pkts {
		if light.inspect(p, 1) {
			t.Fatal("light mode passed RTP media to pion")
		}
	}
	for _, p := range [][]byte{{0, 1, 0, 0}, {22, 0xfe, 0xfd}, {0x80, 200, 0, 6}} {
		if !light.inspect(p, 2) {
			t.Fatalf("light mode swallowed a control datagram %x", p)
		}
	}
	if got := c.packets.Load(); got != 3 {
		t.Errorf("packets = %d, want 3", got)
	}
	if got := c.bytes.Load(); got != 1012+512+512 {
		t.Errorf("bytes = %d, want %d", got, 1012+512+512)
	}
	if got := c.frames.Load(); got != 2 {
		t.Errorf("frames = %d, want 2", got)
	}
	if got := c.gaps.Load(); got != 2 {
		t.Errorf("gaps = %d, want 2", got)
	}
	if c.stun.Load() != 1 || c.dtls.Load() != 1 || c.rtcp.Load() != 1 {
		t.Errorf("control counts stun=%d dtls=%d rtcp=%d, want 1 each", c.stun.Load(), c.dtls.Load(), c.rtcp.Load())
	}
	if c.firstPacket.Load() != 1 || c.lastPacket.Load() != 1 {
		t.Errorf("first/last packet times %d/%d, want 1/1", c.firstPacket.Load(), c.lastPacket.Load())
	}

	// A new SSRC restarts sequence tracking instead of counting a jump.
	light.inspect(rtpPacket(false, 102, 30000, 0, 8, 10), 3)
	if got := c.gaps.Load(); got != 2 {
		t.Errorf("gaps after SSRC change = %d, want still 2", got)
	}
	if c.ssrcChanges.Load() != 1 {
		t.Errorf("ssrcChanges = %d, want 1", c.ssrcChanges.Load())
	}

	var c2 counters
	full := accountant{c: &c2}
	if !full.inspect(pkts[0], 1) {
		t.Error("decode mode did not pass RTP media to pion")
	}
}

func TestAccountantDoesNotAllocate(t *testing.T) {
	var c counters
	a := accountant{c: &c, swallow: true}
	p := rtpPacket(true, 102, 0, 0, 1, 1200)
	seq := uint16(0)
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		p[2], p[3] = byte(seq>>8), byte(seq)
		a.inspect(p, int64(seq))
	})
	if allocs != 0 {
		t.Errorf("inspect allocates %.1f times per packet, want 0", allocs)
	}
}

func BenchmarkAccountantInspect(b *testing.B) {
	var c counters
	a := accountant{c: &c, swallow: true}
	p := rtpPacket(true, 102, 0, 0, 1, 1200)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		p[2], p[3] = byte(i>>8), byte(i)
		a.inspect(p, int64(i))
	}
}

// TestAccountantAudio interleaves an audio stream (the answer's payload
// type 111) with the video: each kind has its own counters and sequence
// space, so neither looks like a loss or a new SSRC to the other.
func TestAccountantAudio(t *testing.T) {
	var c counters
	c.audioPT.add(111)
	a := accountant{c: &c, swallow: true}
	pkts := [][]byte{
		rtpPacket(false, 102, 500, 0, 7, 1000),
		rtpPacket(true, 111, 9000, 0, 42, 200), // Opus carries marker on talkspurts only
		rtpPacket(true, 102, 501, 0, 7, 1000),
		rtpPacket(false, 111, 9001, 960, 42, 200),
		rtpPacket(false, 111, 9004, 3840, 42, 200), // two audio packets lost
		rtpPacket(false, 111, 9004, 3840, 42, 200), // and a duplicate
		rtpPacket(true, 102, 502, 3000, 7, 1000),
	}
	for i, p := range pkts {
		if a.inspect(p, int64(10+i)) {
			t.Fatalf("packet %d: light mode passed media to pion", i)
		}
	}
	if c.packets.Load() != 3 || c.bytes.Load() != 3*1012 || c.frames.Load() != 2 || c.gaps.Load() != 0 {
		t.Errorf("video: packets %d bytes %d frames %d gaps %d, want 3, %d, 2, 0",
			c.packets.Load(), c.bytes.Load(), c.frames.Load(), c.gaps.Load(), 3*1012)
	}
	if c.audioPackets.Load() != 4 || c.audioBytes.Load() != 4*212 || c.audioGaps.Load() != 2 || c.audioDups.Load() != 1 {
		t.Errorf("audio: packets %d bytes %d gaps %d dups %d, want 4, %d, 2, 1",
			c.audioPackets.Load(), c.audioBytes.Load(), c.audioGaps.Load(), c.audioDups.Load(), 4*212)
	}
	if c.ssrcChanges.Load() != 0 {
		t.Errorf("%d SSRC changes from interleaved kinds, want 0", c.ssrcChanges.Load())
	}
	if c.firstPacket.Load() != 10 || c.audioFirst.Load() != 11 {
		t.Errorf("first video/audio packet at %d/%d, want 10/11", c.firstPacket.Load(), c.audioFirst.Load())
	}

	// Before the answer is known nothing is audio: payload types are the
	// only thing that tells the kinds apart.
	var c2 counters
	b := accountant{c: &c2}
	if !b.inspect(pkts[1], 1) {
		t.Error("decode mode did not pass RTP media to pion")
	}
	if c2.audioPackets.Load() != 0 || c2.packets.Load() != 1 {
		t.Errorf("without audio payload types: audio %d video %d, want 0 and 1", c2.audioPackets.Load(), c2.packets.Load())
	}
}

func TestPTSet(t *testing.T) {
	var s ptSet
	for _, pt := range []uint8{0, 63, 64, 111, 127} {
		s.add(pt)
	}
	for pt := 0; pt < 128; pt++ {
		want := pt == 0 || pt == 63 || pt == 64 || pt == 111 || pt == 127
		if s.has(uint8(pt)) != want {
			t.Errorf("has(%d) = %v, want %v", pt, !want, want)
		}
	}
}
