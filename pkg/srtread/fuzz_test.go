package srtread

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// The fuzzed input is a script of frames as a reader's queue hands them
// to the muxer, so the fuzzer varies what a publisher controls (NAL unit
// bytes, audio bytes, timestamps, codec changes, publisher changes)
// rather than spending its time on an encoding of Go structs. Each frame
// is a 4-byte header and its data:
//
//	op      bits 0-1: 0 picture, 1 IDR picture, 2 audio unit, 3 next
//	        generation (a publisher change; no frame); bits 2-3: the
//	        audio track of an audio unit (fuzzTracks)
//	delta   int16, big endian: PTS change from the previous frame, ticks
//	n       data length; fewer bytes if the input ends first
const fuzzOpHeader = 4

const (
	opPicture = iota
	opIDR
	opAudio
	opGen
)

// fuzzTracks are the source tracks a script can pick: each codec the
// muxer writes, and an AAC one with other parameters (a retune).
func fuzzTracks(t testing.TB) [4]*av.AudioTrack {
	mono := aacTrack(t)
	mono.Channels, mono.Config = 1, []byte{0x11, 0x88}
	return [4]*av.AudioTrack{aacTrack(t), mp2Track, opusTrack, mono}
}

// frameScript encodes frames (pictures and source audio of consecutive
// generations) as a script; tracks map each frame's track to its index.
func frameScript(frames []hub.Frame, tracks map[*av.AudioTrack]int) []byte {
	var out []byte
	var pts int64
	var gen uint32
	for _, f := range frames {
		for ; gen < f.Gen; gen++ {
			out = append(out, opGen, 0, 0, 0)
		}
		var op byte
		var p int64
		var data []byte
		switch {
		case f.Video != nil:
			op, p = opPicture, f.Video.PTS
			if f.Video.IDR {
				op = opIDR
			}
			data = f.Video.NALUs[len(f.Video.NALUs)-1]
		case f.Source != nil:
			op, p, data = opAudio|byte(tracks[f.Source.Track])<<2, f.Source.PTS, f.Source.Data
		default:
			continue
		}
		data = data[:min(len(data), 255)]
		d := max(min(p-pts, 32767), -32768)
		pts += d
		out = append(out, op, byte(uint16(d)>>8), byte(uint16(d)), byte(len(data)))
		out = append(out, data...)
	}
	return out
}

// readScript turns a script back into frames; gen counts publishers.
func readScript(b []byte, tracks [4]*av.AudioTrack) []hub.Frame {
	var frames []hub.Frame
	var pts int64 = 1 << 20 // far from zero, so deltas may go back
	var gen uint32
	for len(b) >= fuzzOpHeader {
		op := b[0]
		pts += int64(int16(binary.BigEndian.Uint16(b[1:3])))
		n := min(int(b[3]), len(b)-fuzzOpHeader)
		data := b[fuzzOpHeader : fuzzOpHeader+n]
		b = b[fuzzOpHeader+n:]
		switch op & 3 {
		case opPicture:
			frames = append(frames, hub.Frame{Gen: gen, Video: &av.AccessUnit{PTS: pts, NALUs: [][]byte{data}}})
		case opIDR:
			frames = append(frames, hub.Frame{Gen: gen, Video: &av.AccessUnit{
				PTS: pts, IDR: true, NALUs: [][]byte{testSPS, testPPS, data},
			}})
		case opAudio:
			frames = append(frames, hub.Frame{Gen: gen, Source: &av.AudioUnit{PTS: pts, Data: data, Track: tracks[op>>2&3]}})
		case opGen:
			gen++
		}
	}
	return frames
}

// muxSeeds are scripts of real streams: the start of ffmpeg's H.264+AAC
// clip as tsdemux reads it, and the unit tests' streams of each codec,
// with a publisher change to another codec.
func muxSeeds(t testing.TB) [][]byte {
	tracks := fuzzTracks(t)
	index := map[*av.AudioTrack]int{}
	for i, tr := range tracks {
		index[tr] = i
	}
	clip, err := os.ReadFile(filepath.Join("..", "tsdemux", "testdata", "h264_aac.ts"))
	if err != nil {
		t.Fatal(err)
	}
	var real []hub.Frame
	d := tsdemux.New(bytes.NewReader(clip), tsdemux.Config{
		OnAudio: func(u av.AudioUnit) {
			// The clip's own AAC parameters are 48 kHz stereo LC, the
			// first track's.
			u.Track = tracks[0]
			real = append(real, hub.Frame{Source: &u})
		},
	})
	_ = d.Run(context.Background(), func(au *av.AccessUnit) error {
		real = append(real, hub.Frame{Video: au})
		return nil
	})
	real = real[:min(len(real), 40)]
	seeds := [][]byte{frameScript(real, index)}
	for i, tr := range tracks[:3] {
		s := mkStream(0, 50000, 12, 6, tr)
		change := mkStream(1, 900000, 6, 6, tracks[(i+1)%3])
		seeds = append(seeds, frameScript(append(s.frames, change.frames...), index))
	}
	return append(seeds, frameScript(mkStream(0, 0, 8, 4, nil).frames, index), nil)
}

// FuzzMux feeds arbitrary frames to one reader's muxer: every write
// succeeds (the output never fails here, so an error would end a reader
// for what a publisher sent), the queues it keeps stay within their
// bounds, and what comes out is MPEG-TS that mediacommon reads without a
// decode error (one program; later ones it does not follow), in whole
// packets and messages no larger than SRT's, with
// continuous counters and PMTs whose CRC is right.
func FuzzMux(f *testing.F) {
	for _, s := range muxSeeds(f) {
		f.Add(s)
	}
	tracks := fuzzTracks(f)
	f.Fuzz(func(t *testing.T, script []byte) {
		frames := readScript(script, tracks)
		for _, announced := range []bool{false, true} {
			m, c := newTestMuxer(announced)
			now := time.Unix(1e9, 0)
			for i, fr := range frames {
				if err := m.write(fr, now); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if len(m.pending) > maxPending || len(m.held) > maxHeld {
					t.Fatalf("frame %d: %d frames pending, %d held; bounds %d and %d",
						i, len(m.pending), len(m.held), maxPending, maxHeld)
				}
				now = now.Add(10 * time.Millisecond)
			}
			if err := m.out.Flush(); err != nil {
				t.Fatal(err)
			}
			for i, msg := range c.msgs {
				if len(msg) > messageSize || len(msg)%tsPacketSize != 0 {
					t.Fatalf("message %d is %d bytes", i, len(msg))
				}
			}
			out := c.bytes()
			rep := walkTS(t, out)
			if len(rep.ccErrors) != 0 {
				t.Fatalf("continuity errors: %v", rep.ccErrors)
			}
			// mediacommon's reader keeps the first PMT's tracks, so only
			// a single program can be read back whole; a program change
			// is checked by the walk (new version, CRC, counters).
			if len(rep.pmts) == 1 {
				readBack(t, out)
			}
		}
	})
}

// readBack reads ts with mediacommon's reader, which must report no
// decode error in what the muxer framed: Annex-B, ADTS, Opus control
// headers, PES. MPEG audio is left out: its frames are the publisher's
// bytes as sent, which the reader parses and may find damaged. A stream
// of a picture or two is not read: the reader's demuxer hands a table
// over only once more packets follow, so it ends (io.EOF) before it
// finds them, which says nothing about the stream.
func readBack(t *testing.T, ts []byte) {
	r := &mpegts.Reader{R: bytes.NewReader(ts)}
	err := r.Initialize()
	if errors.Is(err, io.EOF) {
		return
	}
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	r.OnDecodeError(func(err error) { t.Errorf("decode error: %v", err) })
	for _, tr := range r.Tracks() {
		switch tr.Codec.(type) {
		case *mpegts.CodecH264:
			r.OnDataH264(tr, func(int64, int64, [][]byte) error { return nil })
		case *mpegts.CodecMPEG4Audio:
			r.OnDataMPEG4Audio(tr, func(int64, [][]byte) error { return nil })
		case *mpegts.CodecOpus:
			r.OnDataOpus(tr, func(int64, [][]byte) error { return nil })
		}
	}
	for r.Read() == nil {
	}
}

// TestFuzzCorpusMux writes FuzzMux's seeds as its checked-in corpus when
// asked to (see testkit.SeedCorpus).
func TestFuzzCorpusMux(t *testing.T) {
	testkit.SeedCorpusBytes(t, "FuzzMux", muxSeeds(t))
}
