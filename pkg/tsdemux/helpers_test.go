package tsdemux

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// logSink records log lines so tests can assert on warnings.
type logSink struct {
	mu   sync.Mutex
	recs []string // "LEVEL msg k=v ..."
}

type sinkHandler struct {
	s     *logSink
	attrs []slog.Attr
}

func (h sinkHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h sinkHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return sinkHandler{s: h.s, attrs: append(append([]slog.Attr{}, h.attrs...), a...)}
}
func (h sinkHandler) WithGroup(string) slog.Handler { return h }
func (h sinkHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.s.mu.Lock()
	h.s.recs = append(h.s.recs, b.String())
	h.s.mu.Unlock()
	return nil
}

// level returns the recorded lines of one level.
func (s *logSink) level(l slog.Level) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.recs {
		if strings.HasPrefix(r, l.String()+" ") {
			out = append(out, r)
		}
	}
	return out
}

type result struct {
	aus   []*av.AccessUnit
	infos []av.StreamInfo
	err   error
	stats Stats
	logs  *logSink
}

// demux runs a Demuxer over r to the end and checks the invariants every
// output must hold whatever the input.
func demux(t testing.TB, r io.Reader, tweak ...func(*Demuxer)) result {
	t.Helper()
	res := result{logs: &logSink{}}
	d := New(r, Config{
		Logger: slog.New(sinkHandler{s: res.logs}).With("path", "live/test"),
		OnInfo: func(i av.StreamInfo) { res.infos = append(res.infos, i) },
	})
	for _, f := range tweak {
		f(d)
	}
	res.err = d.Run(context.Background(), func(au *av.AccessUnit) error {
		res.aus = append(res.aus, au)
		return nil
	})
	res.stats = d.Stats()
	if err := checkInvariants(res.aus); err != nil {
		t.Fatal(err)
	}
	return res
}

// checkInvariants is what a consumer relies on: IDR first, SPS and PPS in
// front of every IDR, non-decreasing PTS, no AUD/filler, Size matching.
func checkInvariants(aus []*av.AccessUnit) error {
	for i, au := range aus {
		if i == 0 && !au.IDR {
			return fmt.Errorf("first access unit is not an IDR")
		}
		if i > 0 && au.PTS < aus[i-1].PTS {
			return fmt.Errorf("AU %d: PTS %d after %d", i, au.PTS, aus[i-1].PTS)
		}
		if au.Payloads != nil {
			return fmt.Errorf("AU %d: Payloads set", i)
		}
		if au.Codec == av.CodecH265 {
			if err := checkH265(i, au); err != nil {
				return err
			}
			continue
		}
		size, sps, pps, idr := 0, -1, -1, -1
		for j, n := range au.NALUs {
			if len(n) == 0 {
				return fmt.Errorf("AU %d: empty NALU %d", i, j)
			}
			size += len(n)
			switch h264.NALUType(n[0] & 0x1f) {
			case h264.NALUTypeAccessUnitDelimiter, h264.NALUTypeFillerData:
				return fmt.Errorf("AU %d: NALU type %d not dropped", i, n[0]&0x1f)
			case h264.NALUTypeSPS:
				if sps < 0 {
					sps = j
				}
			case h264.NALUTypePPS:
				if pps < 0 {
					pps = j
				}
			case h264.NALUTypeIDR:
				if idr < 0 {
					idr = j
				}
			}
		}
		if size != au.Size {
			return fmt.Errorf("AU %d: Size %d, NALUs sum to %d", i, au.Size, size)
		}
		if au.IDR != (idr >= 0) {
			return fmt.Errorf("AU %d: IDR flag %v but IDR slice index %d", i, au.IDR, idr)
		}
		if au.IDR && !(sps >= 0 && sps < pps && pps < idr) {
			return fmt.Errorf("AU %d: IDR without SPS, PPS in front (sps %d pps %d idr %d)", i, sps, pps, idr)
		}
	}
	return nil
}

// checkH265 is checkInvariants for an H.265 picture: VPS, SPS and PPS,
// in that order, in front of the first slice of every IRAP picture.
func checkH265(i int, au *av.AccessUnit) error {
	size := 0
	for j, n := range au.NALUs {
		if len(n) < 2 {
			return fmt.Errorf("AU %d: NALU %d of %d bytes", i, j, len(n))
		}
		if t := h265Type(n); t == h265.NALUType_AUD_NUT || t == h265.NALUType_FD_NUT {
			return fmt.Errorf("AU %d: NALU type %d not dropped", i, t)
		}
		size += len(n)
	}
	if size != au.Size {
		return fmt.Errorf("AU %d: Size %d, NALUs sum to %d", i, au.Size, size)
	}
	vps, sps, pps, irap := h265Layout(au.NALUs)
	if au.IDR != (irap >= 0) {
		return fmt.Errorf("AU %d: IDR flag %v but IRAP slice index %d", i, au.IDR, irap)
	}
	if au.IDR && !(vps >= 0 && vps < sps && sps < pps && pps < irap) {
		return fmt.Errorf("AU %d: IRAP without VPS, SPS, PPS in front (vps %d sps %d pps %d irap %d)", i, vps, sps, pps, irap)
	}
	return nil
}

func readClip(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (regenerate with testdata/gen.sh; needs ffmpeg: apt-get install -y ffmpeg)", err)
	}
	return b
}

// Synthetic H.264: an SPS from an NVENC 1080p60 stream (frame_num has 8
// bits, no gaps allowed), a PPS, and slices whose headers are real enough
// for parseSliceHeader; their bodies are filler bytes.
var (
	testSPS = []byte{
		103, 100, 0, 42, 172, 44, 172, 7, 128, 34, 126, 92, 5, 168, 8, 8,
		10, 0, 0, 7, 208, 0, 3, 169, 129, 192, 0, 0, 76, 75, 0, 0,
		38, 37, 173, 222, 92, 20,
	}
	testPPS = []byte{0x68, 0xee, 0x3c, 0x80}
	// 352x288 with gaps_in_frame_num allowed, used for SPS changes.
	testSPS2 = []byte{
		0x67, 0x64, 0x00, 0x0c, 0xac, 0x3b, 0x50, 0xb0, 0x4b, 0x42, 0x00, 0x00,
		0x03, 0x00, 0x02, 0x00, 0x00, 0x03, 0x00, 0x3d, 0x08,
	}
	testSEI    = []byte{0x06, 0x05, 0x01, 0xaa, 0x80}
	testFiller = []byte{0x0c, 0xff, 0xff, 0x80}
)

const (
	sliceP = 0
	sliceB = 1
	sliceI = 2
)

// slice builds a slice NAL unit: type 5 for IDR, else 1 with the given
// nal_ref_idc; frame_num is written with 8 bits as testSPS wants.
func slice(idr bool, refIdc byte, sliceType, frameNum uint32) []byte {
	var w bitWriter
	w.ue(0)             // first_mb_in_slice
	w.ue(sliceType + 5) // slice_type (5..9: all slices of the picture alike)
	w.ue(0)             // pic_parameter_set_id
	w.bits(uint64(frameNum), 8)
	w.bits(1, 1) // stop bit stand-in
	hdr := byte(1)
	if idr {
		hdr, refIdc = 5, 3
	}
	out := append([]byte{refIdc<<5 | hdr}, w.bytes()...)
	return append(out, bytes.Repeat([]byte{0x55}, 40)...)
}

type bitWriter struct {
	buf []byte
	n   int
}

func (w *bitWriter) bits(v uint64, n int) {
	for i := n - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.buf = append(w.buf, 0)
		}
		if v>>uint(i)&1 == 1 {
			w.buf[len(w.buf)-1] |= 0x80 >> uint(w.n%8)
		}
		w.n++
	}
}

func (w *bitWriter) ue(v uint32) {
	x := uint64(v) + 1
	l := 0
	for t := x; t > 1; t >>= 1 {
		l++
	}
	w.bits(0, l)
	w.bits(x, l+1)
}

func (w *bitWriter) bytes() []byte { return w.buf }

// tsBuilder writes TS with mediacommon's Writer, as a real muxer would.
type tsBuilder struct {
	t     testing.TB
	buf   bytes.Buffer
	w     mpegts.Writer
	video *mpegts.Track
	aac   *mpegts.Track
}

func newTSBuilder(t testing.TB, withAAC bool) *tsBuilder {
	b := &tsBuilder{t: t, video: &mpegts.Track{Codec: &mpegts.CodecH264{}}}
	b.w = mpegts.Writer{W: &b.buf, Tracks: []*mpegts.Track{b.video}}
	if withAAC {
		b.aac = &mpegts.Track{Codec: &mpegts.CodecMPEG4Audio{Config: mpeg4audio.AudioSpecificConfig{
			Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 2,
		}}}
		b.w.Tracks = append(b.w.Tracks, b.aac)
	}
	if err := b.w.Initialize(); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *tsBuilder) au(pts, dts int64, nalus ...[]byte) {
	b.t.Helper()
	if err := b.w.WriteH264(b.video, pts&(1<<33-1), dts&(1<<33-1), nalus); err != nil {
		b.t.Fatal(err)
	}
}

// gop writes an IDR (with SPS/PPS when ps) followed by n-1 reference P
// pictures, 3000 ticks apart; it returns the next PTS.
func (b *tsBuilder) gop(pts int64, n int, ps bool) int64 {
	idr := [][]byte{slice(true, 3, sliceI, 0)}
	if ps {
		idr = append([][]byte{testSPS, testPPS}, idr...)
	}
	b.au(pts, pts, idr...)
	for i := 1; i < n; i++ {
		pts += 3000
		b.au(pts, pts, slice(false, 2, sliceP, uint32(i)))
	}
	return pts + 3000
}

func (b *tsBuilder) bytes() []byte { return b.buf.Bytes() }

func naluTypes(au *av.AccessUnit) []h264.NALUType {
	out := make([]h264.NALUType, len(au.NALUs))
	for i, n := range au.NALUs {
		out[i] = h264.NALUType(n[0] & 0x1f)
	}
	return out
}
