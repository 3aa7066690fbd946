package main

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	hopus "gopkg.in/hraban/opus.v2"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// dialAudioViewer is dialViewer offering audio too, with RTCP sender
// reports recorded.
func dialAudioViewer(t *testing.T, ts *testServer, path string) *viewer {
	t.Helper()
	return dialViewer(t, ts, path, func(o *whepclient.Options) {
		o.Audio, o.SenderReports = true, true
	})
}

// decodeOpus decodes packets (in RTP order) to 48 kHz stereo, returning
// the left channel and, per packet, its RTP timestamp and where its
// samples start in the output.
func decodeOpus(t *testing.T, pkts []whepclient.AudioPacket) (pcm []float32, starts []int) {
	t.Helper()
	dec, err := hopus.NewDecoder(48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pkts, func(i, j int) bool { return int16(pkts[i].SequenceNumber-pkts[j].SequenceNumber) < 0 })
	buf := make([]float32, 5760*2)
	for _, p := range pkts {
		n, err := dec.DecodeFloat32(p.Payload, buf)
		if err != nil {
			t.Fatalf("Opus packet %d does not decode: %v", p.SequenceNumber, err)
		}
		starts = append(starts, len(pcm))
		for i := range n {
			pcm = append(pcm, buf[2*i])
		}
	}
	return pcm, starts
}

// toneCheck returns the level in dBFS and the share of the signal's energy
// at freq (Goertzel over the whole signal against its total energy).
func toneCheck(pcm []float32, freq float64) (dbfs, share float64) {
	var energy float64
	for _, s := range pcm {
		energy += float64(s) * float64(s)
	}
	rms := math.Sqrt(energy / float64(len(pcm)))
	w := 2 * math.Pi * freq / 48000
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, s := range pcm {
		s0 := float64(s) + c*s1 - s2
		s2, s1 = s1, s0
	}
	power := s1*s1 + s2*s2 - c*s1*s2
	// A pure tone of amplitude A over N samples gives power (A·N/2)², and
	// its energy is A²·N/2, so the share is 2·power/(N·energy).
	return 20 * math.Log10(rms), 2 * power / (float64(len(pcm)) * energy)
}

// TestAudioCodecs: publishers sending AAC at 44.1 and 48 kHz, MP2
// (ffmpeg's default for MPEG-TS) and Opus are heard by a pion viewer as
// Opus that decodes to the published 1 kHz tone, with video at the
// published frame rate.
func TestAudioCodecs(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	cases := []struct {
		path string
		args []string
	}{
		{"live/aac44", []string{"-ar", "44100", "-c:a", "aac", "-b:a", "128k"}},
		{"live/aac48", []string{"-ar", "48000", "-c:a", "aac", "-b:a", "128k"}},
		{"live/mp2", []string{"-ar", "48000"}}, // no -c:a: ffmpeg picks MP2 for MPEG-TS
		{"live/opus", []string{"-ar", "48000", "-c:a", "libopus", "-b:a", "96k"}},
	}
	for _, tc := range cases {
		args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
			"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
			"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30"}
		startFFmpeg(t, append(args, tc.args...), ts.srtURL("publish:"+tc.path))
	}
	viewers := make([]*viewer, len(cases))
	for i, tc := range cases {
		ts.waitPublisher(t, tc.path)
		viewers[i] = dialAudioViewer(t, ts, tc.path)
	}
	for i, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			v := viewers[i]
			// 60 of the frames past the catch-up burst, which under load
			// lasts longer.
			testkit.WaitFor(t, 20*time.Second, "3 s of audio and 60 live frames", func() bool {
				aus, audio := v.snapshot()
				return len(audio) >= 150 && len(liveUnits(aus)) >= 60
			})
			aus, audio := v.snapshot()
			pcm, _ := decodeOpus(t, audio)
			// Skip the first 100 ms: the encoder's start-up.
			db, share := toneCheck(pcm[4800:], 1000)
			t.Logf("%s: %d Opus packets, tone %.1f dBFS, %.3f of the energy at 1 kHz; video %.1f fps",
				tc.path, len(audio), db, share, liveFrameRate(aus))
			if db < -40 || share < 0.9 {
				t.Errorf("%s: decoded audio is %.1f dBFS with %.3f of its energy at 1 kHz, want a 1 kHz tone above -40 dBFS", tc.path, db, share)
			}
			if fps := liveFrameRate(aus); fps < 28 || fps > 32 {
				t.Errorf("%s: video at %.1f fps, want 30", tc.path, fps)
			}
		})
	}
	for _, p := range ts.ingest.Stats() {
		if p.AudioOut != "Opus" || p.Totals.AudioFramesOut == 0 {
			t.Errorf("%s: audio %q → %q, %d frames out; want Opus frames", p.Path, p.AudioIn, p.AudioOut, p.Totals.AudioFramesOut)
		}
	}
}

// TestLipSync: a clip flashes white and beeps at the start of every
// second (the flash is the IDR, so the client can spot it without
// decoding pictures). Placing each flash and each beep onset on the NTP
// clock of the two tracks' sender reports, as a browser does, they must
// be within 40 ms of each other.
func TestLipSync(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, []string{"-re",
		"-f", "lavfi", "-i", "color=c=black:size=320x240:rate=30[b];color=c=white:size=320x240:rate=30[w];[b][w]blend=all_expr='if(eq(mod(N\\,30)\\,0)\\,B\\,A)'",
		"-f", "lavfi", "-i", "aevalsrc='if(lt(mod(t\\,1)\\,0.1)\\,0.5*sin(2*PI*1000*t)\\,0)':s=48000",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0",
		"-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
		"-c:a", "aac", "-ar", "48000"}, ts.srtURL("publish:live/sync"))
	ts.waitPublisher(t, "live/sync")
	v := dialAudioViewer(t, ts, "live/sync")
	testkit.WaitFor(t, 40*time.Second, "4 flashes with audio and sender reports of both tracks", func() bool {
		aus, audio := v.snapshot()
		_, okV := v.SenderReport(webrtc.RTPCodecTypeVideo)
		_, okA := v.SenderReport(webrtc.RTPCodecTypeAudio)
		idrs := 0
		for _, au := range aus {
			if au.IDR {
				idrs++
			}
		}
		return okV && okA && idrs >= 6 && len(audio) >= 250
	})
	aus, audio := v.snapshot()
	srV, _ := v.SenderReport(webrtc.RTPCodecTypeVideo)
	srA, _ := v.SenderReport(webrtc.RTPCodecTypeAudio)

	// Flashes are the IDRs played at the live edge: the cached GOP a new
	// viewer starts with is sent fast with compressed timestamps (the
	// player catches up), so it cannot be in sync with real-time audio.
	var flashes []time.Time
	for i := 1; i < len(aus); i++ {
		if step := aus[i].RTPTimestamp - aus[i-1].RTPTimestamp; aus[i].IDR && step > 2700 && step < 3300 {
			flashes = append(flashes, srV.At(aus[i].RTPTimestamp))
		}
	}
	sort.Slice(audio, func(i, j int) bool { return int16(audio[i].SequenceNumber-audio[j].SequenceNumber) < 0 })
	pcm, starts := decodeOpus(t, audio)
	// A beep's onset: the first 1 ms block loud enough after at least
	// 300 ms of silence.
	var beeps []time.Time
	quiet := 0
	pkt := 0
	for blk := 0; blk+48 <= len(pcm); blk += 48 {
		var e float64
		for _, s := range pcm[blk : blk+48] {
			e += float64(s) * float64(s)
		}
		loud := math.Sqrt(e/48) > 0.05
		if loud && quiet >= 300 {
			for pkt+1 < len(starts) && starts[pkt+1] <= blk {
				pkt++
			}
			ts := audio[pkt].RTPTimestamp + uint32(blk-starts[pkt])
			beeps = append(beeps, srA.At(ts))
		}
		if loud {
			quiet = 0
		} else {
			quiet++
		}
	}
	if len(flashes) < 3 || len(beeps) < 3 {
		t.Fatalf("found %d live flashes and %d beeps, want at least 3 of each", len(flashes), len(beeps))
	}
	matched := 0
	for _, f := range flashes {
		best := time.Duration(math.MaxInt64)
		for _, b := range beeps {
			if d := b.Sub(f); d.Abs() < best.Abs() {
				best = d
			}
		}
		if best.Abs() > 500*time.Millisecond {
			continue // the beep of this flash was not captured
		}
		matched++
		t.Logf("flash at %s: beep %+v from it", f.Format("15:04:05.000"), best.Round(time.Millisecond))
		if best.Abs() > 40*time.Millisecond {
			t.Errorf("audio is %v from video at a flash, want within ±40 ms", best.Round(time.Millisecond))
		}
	}
	if matched < 3 {
		t.Errorf("only %d flashes had a beep within 500 ms", matched)
	}
}

// TestUnplayableAudio: an audio codec we do not read (AC-3) and MP2 at a
// sample rate mediacommon cannot read (22.05 kHz) each get one warning
// naming the fix, while video plays at the full frame rate and the path
// announces no audio.
func TestUnplayableAudio(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	cases := []struct{ path, fix string }{
		{"live/ac3", "-c:a aac"},
		{"live/mp2low", "-ar 48000"},
	}
	withAudio := func(rate string, audio ...string) []string {
		args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
			"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=" + rate,
			"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30"}
		return append(args, audio...)
	}
	startFFmpeg(t, withAudio("48000", "-c:a", "ac3"), ts.srtURL("publish:live/ac3"))
	startFFmpeg(t, withAudio("22050", "-c:a", "mp2", "-ar", "22050"), ts.srtURL("publish:live/mp2low"))
	for _, tc := range cases {
		ts.waitPublisher(t, tc.path)
		v := dialViewer(t, ts, tc.path)
		// Past the catch-up burst, which under load lasts longer.
		v.waitLive(t, 60, 20*time.Second)
		if fps := liveFrameRate(v.units()); fps < 28 || fps > 32 {
			t.Errorf("%s: video at %.1f fps, want 30", tc.path, fps)
		}
		lines := ts.logs.Lines("path="+tc.path, "audio track not played")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.fix) {
			t.Errorf("%s: want one warning naming %q, got %q", tc.path, tc.fix, lines)
		}
	}
	for _, p := range ts.ingest.Stats() {
		if p.AudioOut != "" {
			t.Errorf("%s announces audio %q → %q", p.Path, p.AudioIn, p.AudioOut)
		}
	}
}

// TestDamagedAudio: an AAC track with every fourth frame's header broken
// keeps its video at the full frame rate and its sound going; the damage
// is counted and summarised in one warning.
func TestDamagedAudio(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "damaged.ts")
	if err := os.WriteFile(file, damagedAACClip(t, "8"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, nil)
	startFFmpeg(t, []string{"-re", "-i", file, "-c", "copy"}, ts.srtURL("publish:live/damaged"))
	ts.waitPublisher(t, "live/damaged")
	v := dialViewer(t, ts, "live/damaged", func(o *whepclient.Options) { o.Audio = true })
	testkit.WaitFor(t, 20*time.Second, "2 s of live video and 2 s of audio", func() bool {
		aus, audio := v.snapshot()
		return len(liveUnits(aus)) >= 60 && len(audio) >= 100
	})
	if fps := liveFrameRate(v.units()); fps < 28 || fps > 32 {
		t.Errorf("video at %.1f fps, want 30", fps)
	}
	var errs uint64
	for _, p := range ts.ingest.Stats() {
		errs += p.Totals.AudioErrors
	}
	if errs == 0 {
		t.Error("no audio errors counted for a track with broken frames")
	}
	ts.logs.WaitLog(t, 10*time.Second, "audio decode errors", "path=live/damaged")
}
