package srtread

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// Stream types in the PMT (ISO 13818-1 table 2-34).
const (
	typeH264  = 0x1b
	typeAAC   = 0x0f
	typeMPEG1 = 0x03
	typeOpus  = 0x06 // private data, with the Opus registration descriptor
)

// Each source codec comes out as it went in, demuxed back by mediacommon:
// every picture from the first IDR on (PTS moved by one shift), every
// audio unit from that IDR on, byte for byte, in whole 1316-byte messages
// with continuous counters.
func TestMuxCodecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		track *av.AudioTrack
		codec mpegts.Codec
		typ   byte
	}{
		{"AAC", aacTrack(t), &mpegts.CodecMPEG4Audio{}, typeAAC},
		{"MP2", mp2Track, &mpegts.CodecMPEG1Audio{}, typeMPEG1},
		{"Opus", opusTrack, &mpegts.CodecOpus{}, typeOpus},
		{"video only", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const start = 50000
			s := mkStream(0, start, 60, 30, tc.track)
			// The first IDR is at start; pictures and audio before it
			// (a reader that joined without a cache) are not sent.
			early := []hub.Frame{{Video: mkVideo(start-6000, false)}}
			if tc.track != nil {
				early = append(early, hub.Frame{Source: mkUnit(tc.track, start-3000, 999)})
			}
			m, c := newTestMuxer(tc.track != nil)
			feed(t, m, append(early, s.frames...), time.Now(), 10*time.Millisecond)
			if err := m.out.Flush(); err != nil {
				t.Fatal(err)
			}

			for i, msg := range c.msgs[:len(c.msgs)-1] {
				if len(msg) != messageSize {
					t.Fatalf("message %d of %d is %d bytes, want %d", i, len(c.msgs), len(msg), messageSize)
				}
			}
			d := demux(t, c.bytes())
			if len(d.video) != 60 || !d.firstIDR {
				t.Fatalf("%d pictures, first IDR %v; want 60 from an IDR", len(d.video), d.firstIDR)
			}
			shift := int64(startPTS - start)
			for i, pts := range d.video {
				if want := start + int64(i)*3000 + shift; pts != want {
					t.Fatalf("picture %d at %d, want %d", i, pts, want)
				}
			}
			if tc.track == nil {
				if d.audioCodec != nil || len(d.audio) != 0 {
					t.Fatalf("audio %T with %d units in a video-only stream", d.audioCodec, len(d.audio))
				}
			} else {
				if fmt.Sprintf("%T", d.audioCodec) != fmt.Sprintf("%T", tc.codec) {
					t.Fatalf("audio track %T, want %T", d.audioCodec, tc.codec)
				}
				if len(d.audio) != len(s.units) {
					t.Fatalf("%d audio units out of %d", len(d.audio), len(s.units))
				}
				for i, u := range s.units {
					if !bytes.Equal(d.audio[i], u.Data) || d.audioPTS[i] != u.PTS+shift {
						t.Fatalf("unit %d: % x at %d, want % x at %d", i, d.audio[i], d.audioPTS[i], u.Data, u.PTS+shift)
					}
				}
			}
			rep := walkTS(t, c.bytes())
			if len(rep.ccErrors) != 0 || len(rep.pmts) != 1 {
				t.Fatalf("continuity errors %v, PMTs %v; want none and one", rep.ccErrors, rep.pmts)
			}
			if tc.track != nil && len(rep.pts[audioPIDA]) != len(s.units) {
				t.Fatalf("%d audio PES, want %d", len(rep.pts[audioPIDA]), len(s.units))
			}
			want := []pmtStream{{typeH264, videoPID}}
			if tc.track != nil {
				want = append(want, pmtStream{tc.typ, audioPIDA})
			}
			if p := rep.pmts[0]; p.version != 0 || p.pcrPID != videoPID || !slices.Equal(p.streams, want) {
				t.Fatalf("PMT %v, want v0 pcr=%d %v", p, videoPID, want)
			}
			if !rep.rai[videoPID][0] || rep.rai[videoPID][1] || !rep.rai[videoPID][30] {
				t.Fatalf("random access flags of pictures 0, 1, 30: %v", rep.rai[videoPID][:31])
			}
		})
	}
}

// A publisher change keeps one TS: counters go on, timestamps go on after
// the wall time that passed, the new publisher starts at its first IDR,
// and a new audio codec comes with a new PMT version and a new PID.
func TestMuxPublisherChange(t *testing.T) {
	for _, tc := range []struct {
		name       string
		next       *av.AudioTrack
		wantPMTs   int
		wantSecond []pmtStream
	}{
		{"same tracks", nil, 1, nil},
		{"AAC to MP2", mp2Track, 2, []pmtStream{{typeH264, videoPID}, {typeMPEG1, audioPIDB}}},
		{"AAC to no audio", &av.AudioTrack{}, 2, []pmtStream{{typeH264, videoPID}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aac := aacTrack(t)
			next := tc.next
			switch {
			case next == nil:
				next = aacTrack(t) // an equal track from the new publisher
			case next.Codec == av.AudioCodecUnknown:
				next = nil
			}
			first := mkStream(0, 10000, 45, 30, aac)
			// The new publisher's clock starts elsewhere; two pictures
			// reach the reader before its first IDR.
			second := mkStream(1, 5_000_000, 62, 60, next)
			lead := []hub.Frame{{Video: mkVideo(4_994_000, false), Gen: 1}, {Video: mkVideo(4_997_000, false), Gen: 1}}

			m, c := newTestMuxer(true)
			at := time.Now()
			at = feed(t, m, first.frames, at, 10*time.Millisecond)
			// Two seconds without a publisher.
			at = at.Add(2 * time.Second)
			feed(t, m, append(lead, second.frames...), at, 10*time.Millisecond)
			if err := m.out.Flush(); err != nil {
				t.Fatal(err)
			}

			rep := walkTS(t, c.bytes())
			if len(rep.ccErrors) != 0 {
				t.Fatalf("continuity errors: %v", rep.ccErrors)
			}
			if len(rep.pmts) != tc.wantPMTs {
				t.Fatalf("PMTs %v, want %d", rep.pmts, tc.wantPMTs)
			}
			if tc.wantPMTs == 2 {
				if p := rep.pmts[1]; p.version != 1 || p.pcrPID != videoPID || !slices.Equal(p.streams, tc.wantSecond) {
					t.Fatalf("second PMT %v, want v1 pcr=%d %v", p, videoPID, tc.wantSecond)
				}
			}
			video := rep.pts[videoPID]
			if len(video) != 45+62 {
				t.Fatalf("%d pictures, want %d (the two before the new IDR are skipped)", len(video), 45+62)
			}
			for i := 1; i < len(video); i++ {
				if video[i] <= video[i-1] {
					t.Fatalf("picture %d at %d after %d", i, video[i], video[i-1])
				}
			}
			// The last old picture went out 10 ms before the pause, the
			// new IDR 20 ms after it (behind the two skipped pictures).
			gap := video[45] - video[44]
			if wantGap := int64(2.03 * av.ClockRate); gap < wantGap-av.ClockRate/100 || gap > wantGap+av.ClockRate/100 {
				t.Fatalf("publisher change moved the timeline by %d ticks, want about %d", gap, wantGap)
			}
			if !rep.rai[videoPID][45] {
				t.Fatal("the new publisher's first picture is not a random access point")
			}
			if m.tl.Changes() != 1 {
				t.Fatalf("timeline counted %d publisher changes, want 1", m.tl.Changes())
			}
			// Audio never goes back, on any PID.
			for pid, pts := range rep.pts {
				if pid == videoPID {
					continue
				}
				for i := 1; i < len(pts); i++ {
					if pts[i] <= pts[i-1] {
						t.Fatalf("pid %d: audio at %d after %d", pid, pts[i], pts[i-1])
					}
				}
			}
		})
	}
}

// A segment whose publisher announced audio waits for its first unit, so
// the program has its audio from the first picture on; when none comes
// within audioWait it starts without and changes program once it comes.
func TestMuxWaitsForAnnouncedAudio(t *testing.T) {
	aac := aacTrack(t)
	t.Run("audio after five pictures", func(t *testing.T) {
		m, c := newTestMuxer(true)
		var frames []hub.Frame
		for i := range 5 {
			frames = append(frames, hub.Frame{Video: mkVideo(int64(i)*3000, i == 0)})
		}
		frames = append(frames, hub.Frame{Source: mkUnit(aac, 0, 0)}, hub.Frame{Video: mkVideo(15000, false)})
		feed(t, m, frames, time.Now(), time.Millisecond)
		if err := m.out.Flush(); err != nil {
			t.Fatal(err)
		}
		rep := walkTS(t, c.bytes())
		if len(rep.pmts) != 1 || len(rep.pmts[0].streams) != 2 || len(rep.pts[videoPID]) != 6 || len(rep.pts[audioPIDA]) != 1 {
			t.Fatalf("PMTs %v, %d pictures, %d audio PES; want one PMT with audio, 6 and 1", rep.pmts, len(rep.pts[videoPID]), len(rep.pts[audioPIDA]))
		}
	})
	t.Run("audio too late", func(t *testing.T) {
		m, c := newTestMuxer(true)
		s := mkStream(0, 0, 60, 60, nil)
		feed(t, m, s.frames[:40], time.Now(), time.Millisecond)
		feed(t, m, []hub.Frame{{Source: mkUnit(aac, 40*3000, 0)}}, time.Now(), time.Millisecond)
		feed(t, m, s.frames[40:], time.Now(), time.Millisecond)
		if err := m.out.Flush(); err != nil {
			t.Fatal(err)
		}
		rep := walkTS(t, c.bytes())
		if len(rep.ccErrors) != 0 || len(rep.pmts) != 2 || len(rep.pmts[0].streams) != 1 || len(rep.pmts[1].streams) != 2 {
			t.Fatalf("continuity errors %v, PMTs %v; want a video-only program, then one with audio", rep.ccErrors, rep.pmts)
		}
		if len(rep.pts[videoPID]) != 60 || len(rep.pts[audioPIDA]) != 1 {
			t.Fatalf("%d pictures and %d audio PES, want 60 and 1", len(rep.pts[videoPID]), len(rep.pts[audioPIDA]))
		}
	})
}

// New parameters of the same codec keep the program; the ADTS headers
// follow them.
func TestMuxRetunesAAC(t *testing.T) {
	m, c := newTestMuxer(true)
	first := aacTrack(t)
	mono := aacTrack(t)
	mono.Channels = 1
	mono.Config = []byte{0x11, 0x88} // LC, 48 kHz, mono
	// The unit before the first picture is not sent, but it tells the
	// track, so the program starts with audio at once.
	frames := []hub.Frame{
		{Source: mkUnit(first, 0, 0)},
		{Video: mkVideo(0, true)},
		{Source: mkUnit(first, 1920, 1)},
		{Video: mkVideo(3000, false)},
		{Source: mkUnit(mono, 3840, 2)},
		{Video: mkVideo(6000, false)},
	}
	feed(t, m, frames, time.Now(), time.Millisecond)
	if err := m.out.Flush(); err != nil {
		t.Fatal(err)
	}
	rep := walkTS(t, c.bytes())
	if len(rep.pmts) != 1 || len(rep.pmts[0].streams) != 2 || len(rep.pts[audioPIDA]) != 2 {
		t.Fatalf("PMTs %v, %d audio PES; want one program with audio and 2 units", rep.pmts, len(rep.pts[audioPIDA]))
	}
	// The channel configuration of the last ADTS header (ISO 14496-3
	// 1.A.2.2.1) is mono.
	data := c.bytes()
	i := bytes.LastIndex(data, []byte{0xff, 0xf1})
	if i < 0 || (data[i+2]&1)<<2|data[i+3]>>6 != 1 {
		t.Fatalf("last ADTS header % x, want channel configuration 1", data[i:i+7])
	}
}

// The packetizer renumbers whatever it is given, and sends whole messages.
func TestPacketizer(t *testing.T) {
	c := &capture{}
	p := newPacketizer(c.send)
	pkt := func(pid uint16, cc byte, payload bool) []byte {
		b := make([]byte, tsPacketSize)
		b[0], b[1], b[2] = 0x47, byte(pid>>8), byte(pid)
		b[3] = 0x20 | cc // adaptation field only
		if payload {
			b[3] = 0x10 | cc
		}
		return b
	}
	// Written in odd pieces, as the writer's bit writer does.
	var in []byte
	for i := range 9 {
		in = append(in, pkt(256, 7, i != 4)...)
	}
	for len(in) > 0 {
		n := min(len(in), 1+len(in)%13)
		if _, err := p.Write(in[:n]); err != nil {
			t.Fatal(err)
		}
		in = in[n:]
	}
	if len(c.msgs) != 1 || len(c.msgs[0]) != messageSize {
		t.Fatalf("%d messages before Flush, want one of %d bytes", len(c.msgs), messageSize)
	}
	if _, err := p.Write(pkt(256, 0, true)[:100]); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(); err != errPartialPacket {
		t.Fatalf("Flush inside a packet: %v, want errPartialPacket", err)
	}
	var ccs []byte
	for _, m := range c.msgs {
		for off := 0; off < len(m); off += tsPacketSize {
			ccs = append(ccs, m[off+3]&0xf)
		}
	}
	// The adaptation-only fifth packet repeats its predecessor's counter.
	if want := []byte{0, 1, 2, 3, 3, 4, 5}; !bytes.Equal(ccs, want) {
		t.Fatalf("continuity counters %v, want %v", ccs, want)
	}
}

// mpegCRC is CRC-32/MPEG-2: its check value, and a PMT section the
// writer produced, which carries the CRC the writer computed.
func TestMPEGCRC(t *testing.T) {
	if got := mpegCRC([]byte("123456789")); got != 0x0376e6e7 {
		t.Fatalf("CRC of 123456789 = %#x, want 0x0376e6e7", got)
	}
}
