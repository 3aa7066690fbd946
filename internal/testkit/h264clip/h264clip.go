// Package h264clip makes short H.264 clips with ffmpeg, cut into access
// units the way the publisher does, and feeds them to a hub path, for the
// tests of the WHEP server and its extensions.
package h264clip

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

// Make encodes a short H.264 clip with ffmpeg and cuts it into access
// units the way the publisher does (payloads fragmented once).
func Make(t testing.TB, frames, gop int) []*av.AccessUnit {
	t.Helper()
	out := filepath.Join(t.TempDir(), "clip.h264")
	testkit.FFmpeg(t, "-f", "lavfi",
		"-i", "testsrc2=size=320x240:rate=30", "-frames:v", strconv.Itoa(frames),
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", strconv.Itoa(gop),
		"-pix_fmt", "yuv420p", "-x264-params", "aud=1:repeat-headers=1", "-f", "h264", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var aus []*av.AccessUnit
	var cur [][]byte
	flush := func() {
		if len(cur) == 0 {
			return
		}
		au := &av.AccessUnit{PTS: int64(len(aus)) * 3000, NALUs: cur}
		for _, n := range cur {
			au.Size += len(n)
			if n[0]&0x1f == 5 {
				au.IDR = true
			}
		}
		au.Payloads = rtph264.Fragment(cur, 0)
		aus = append(aus, au)
		cur = nil
	}
	for _, n := range splitAnnexB(data) {
		if n[0]&0x1f == 9 { // access unit delimiter: a new picture starts
			flush()
			continue
		}
		cur = append(cur, n)
	}
	flush()
	if len(aus) != frames || !aus[0].IDR {
		t.Fatalf("clip: got %d access units (first IDR %v), want %d starting with an IDR", len(aus), len(aus) > 0 && aus[0].IDR, frames)
	}
	return aus
}

func splitAnnexB(b []byte) [][]byte {
	var out [][]byte
	for {
		i := bytes.Index(b, []byte{0, 0, 1})
		if i < 0 {
			break
		}
		b = b[i+3:]
		j := bytes.Index(b, []byte{0, 0, 1})
		var n []byte
		if j < 0 {
			n = b
		} else {
			n = b[:j]
			b = b[j:]
		}
		n = bytes.TrimRight(n, "\x00")
		if len(n) > 0 {
			out = append(out, n)
		}
		if j < 0 {
			break
		}
	}
	return out
}

// Feed writes the clip to pub in a loop, a frame every 10 ms, until the
// test ends or stop (idempotent) is called.
func Feed(t testing.TB, pub *hub.Publisher, clip []*av.AccessUnit) (stop func()) {
	return FeedWith(t, pub, clip, nil)
}

// FeedWith is Feed that also hands each unit, once written, to also (nil:
// nobody) on the feeding goroutine: a test's transcoder of the path, say.
func FeedWith(t testing.TB, pub *hub.Publisher, clip []*av.AccessUnit, also func(*av.AccessUnit)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			au := *clip[n%len(clip)]
			au.PTS = int64(n) * 3000
			pub.Write(&au)
			if also != nil {
				also(&au)
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}
