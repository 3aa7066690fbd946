package whep

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/hraban/opus.v2"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// makeOpus encodes n 20 ms stereo frames of a 1 kHz tone with a little
// noise, which makes every packet distinct, so a test can tell from a
// received payload which frame it was.
func makeOpus(t *testing.T, n int) []*av.AudioFrame {
	t.Helper()
	enc, err := opus.NewEncoder(av.OpusClockRate, 2, opus.AppAudio)
	if err != nil {
		t.Fatalf("Opus encoder: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pcm := make([]int16, 960*2)
	buf := make([]byte, 1500)
	seen := map[string]bool{}
	out := make([]*av.AudioFrame, 0, n)
	for i := range n {
		for j := range 960 {
			v := 8000*math.Sin(2*math.Pi*1000*float64(i*960+j)/av.OpusClockRate) + float64(rng.IntN(2000)-1000)
			pcm[2*j], pcm[2*j+1] = int16(v), int16(v)
		}
		k, err := enc.Encode(pcm, buf)
		if err != nil {
			t.Fatalf("Opus encode: %v", err)
		}
		data := bytes.Clone(buf[:k])
		if seen[string(data)] {
			t.Fatalf("Opus frame %d repeats an earlier packet; the test needs distinct packets", i)
		}
		seen[string(data)] = true
		out = append(out, &av.AudioFrame{Duration: 960, Data: data})
	}
	return out
}

// avFrame is one publisher write: a video access unit or an audio frame.
type avFrame struct {
	v *av.AccessUnit
	a *av.AudioFrame
}

func (f avFrame) pts() int64 {
	if f.v != nil {
		return f.v.PTS
	}
	return f.a.PTS
}

// avClip is a stream of distinct frames in PTS order (video first on equal
// PTS), with the maps back from content to PTS.
type avClip struct {
	frames     []avFrame
	videoPTS   map[string]int64 // auKey → PTS
	audioPTS   map[string]int64 // payload → PTS
	videoCount int
}

func auKey(nalus [][]byte) string {
	var b strings.Builder
	for _, n := range nalus {
		b.WriteString(string(rune(len(n))))
		b.Write(n)
	}
	return b.String()
}

// newAVClip stamps every video frame of clip and as many audio frames as
// cover it: video n at n·videoStep, audio m at m·audioStep.
func newAVClip(t *testing.T, clip []*av.AccessUnit) *avClip {
	t.Helper()
	audio := makeOpus(t, len(clip)*videoStep/audioStep)
	c := &avClip{videoPTS: map[string]int64{}, audioPTS: map[string]int64{}, videoCount: len(clip)}
	vi, ai := 0, 0
	for vi < len(clip) || ai < len(audio) {
		if ai >= len(audio) || (vi < len(clip) && int64(vi*videoStep) <= int64(ai*audioStep)) {
			au := *clip[vi] // the same immutable payloads
			au.PTS = int64(vi * videoStep)
			c.videoPTS[auKey(au.NALUs)] = au.PTS
			c.frames = append(c.frames, avFrame{v: &au})
			vi++
			continue
		}
		af := *audio[ai]
		af.PTS = int64(ai * audioStep)
		c.audioPTS[string(af.Data)] = af.PTS
		c.frames = append(c.frames, avFrame{a: &af})
		ai++
	}
	return c
}

func (f avFrame) writeTo(pub *hub.Publisher) {
	if f.v != nil {
		pub.Write(f.v)
	} else {
		pub.WriteAudio(f.a)
	}
}

// avViewer records what a whepclient viewer receives.
type avViewer struct {
	mu    sync.Mutex
	aus   []whepclient.AccessUnit
	audio []whepclient.AudioPacket
	sess  *whepclient.Session
}

// dialAV dials a viewer that records what it receives; mods change its
// options (offer shape) before it dials.
func dialAV(t *testing.T, ctx context.Context, url string, audio bool, mods ...func(*whepclient.Options)) *avViewer {
	t.Helper()
	v := &avViewer{}
	opts := whepclient.Options{
		Decode: true,
		OnAccessUnit: func(au whepclient.AccessUnit) {
			v.mu.Lock()
			v.aus = append(v.aus, au)
			v.mu.Unlock()
		},
		Audio: audio,
		OnAudioPacket: func(p whepclient.AudioPacket) {
			v.mu.Lock()
			v.audio = append(v.audio, p)
			v.mu.Unlock()
		},
		SenderReports: true,
		SettingEngine: testkit.LoopbackOnly,
		Logger:        testLogger(t),
	}
	for _, m := range mods {
		m(&opts)
	}
	sess, err := whepclient.Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	v.sess = sess
	return v
}

// received maps what arrived back to PTS, in arrival order per track.
func (v *avViewer) received(t *testing.T, c *avClip) (video, audio []int64) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, au := range v.aus {
		pts, ok := c.videoPTS[auKey(au.NALUs)]
		if !ok {
			t.Fatalf("received an access unit that was never published")
		}
		video = append(video, pts)
	}
	for _, p := range v.audio {
		pts, ok := c.audioPTS[string(p.Payload)]
		if !ok {
			t.Fatalf("received an Opus packet that was never published")
		}
		audio = append(audio, pts)
	}
	return video, audio
}

func startHubServer(t *testing.T, h *hub.Hub, mod func(*Config)) string {
	t.Helper()
	_, hs := startServer(t, hubSource(h), mod)
	return hs.URL
}

func waitAttached(t *testing.T, h *hub.Hub, n int) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "viewers attached", func() bool {
		k := 0
		for _, p := range h.Paths() {
			for _, s := range p.Sessions {
				if s.Attached {
					k++
				}
			}
		}
		return k >= n
	})
}
