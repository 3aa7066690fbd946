// Package tsfixture builds MPEG-TS streams in-process with mediacommon's
// muxer, for the tests of more than one package that reads TS (tsdemux,
// ingest). It lives apart from testkit so that the many tests importing
// testkit (mediaplane, whep, hub, ...) do not link a TS muxer they never
// use.
package tsfixture

import (
	"bytes"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
)

// OpusOnly is a program with one stereo Opus track and no video: five
// 20 ms packets, enough for a demuxer to see the PMT and the track's data
// and refuse it for its missing video.
func OpusOnly(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	tr := &mpegts.Track{Codec: &mpegts.CodecOpus{ChannelCount: 2}}
	w := mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{tr}}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := w.WriteOpus(tr, int64(i)*1800, [][]byte{{0xfc, 1, 2, 3}}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}
