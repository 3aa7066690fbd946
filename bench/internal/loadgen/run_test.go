package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunAgainstSrtwhep is the acceptance test of issue 4: five sessions
// (three decoding) against the real server all verified, at about the
// clip's bitrate.
func TestRunAgainstSrtwhep(t *testing.T) {
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := Run(ctx, RunConfig{
		Pool:     Config{URL: srv.WHEP, DecodeEvery: 2},
		Criteria: Criteria{FPS: 30},
		N:        5,
		Rate:     20,
		Hold:     8 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("clip %.0f kbit/s\n%s", srv.ClipKbps, out.String())

	if rep.Connected != 5 || rep.Verified != 5 {
		t.Errorf("%d connected, %d verified; want 5 and 5", rep.Connected, rep.Verified)
	}
	decoders := 0
	for _, s := range rep.Sessions {
		lo, hi := 0.6*srv.ClipKbps, 1.4*srv.ClipKbps
		if s.Window.Kbps < lo || s.Window.Kbps > hi {
			t.Errorf("session %d got %.0f kbit/s; the clip is %.0f (want within ±40%%)", s.ID, s.Window.Kbps, srv.ClipKbps)
		}
		if s.FirstPacket <= 0 {
			t.Errorf("session %d has no first-packet time", s.ID)
		}
		if s.Decode {
			decoders++
			if s.Width != 1280 || s.Height != 720 || s.FirstIDR <= 0 || s.Keyframes == 0 {
				t.Errorf("decode session %d: %dx%d, first IDR %v, %d keyframes; want 1280x720 and IDRs",
					s.ID, s.Width, s.Height, s.FirstIDR, s.Keyframes)
			}
		}
	}
	if decoders != 3 {
		t.Errorf("%d decode sessions, want 3 (DecodeEvery 2 of 5)", decoders)
	}
	if rep.GenCPUHold <= 0 {
		t.Error("the generator's own CPU was not measured")
	}
	// The path has audio, but these offers have none.
	if rep.AudioPackets != 0 {
		t.Errorf("%d audio packets counted for video-only offers", rep.AudioPackets)
	}
}

// TestRunWithAudio offers audio, as a browser does, to a path whose AAC
// the server transcodes: light sessions tell the Opus packets from the
// video by the answer's payload type, decoding sessions decrypt them too,
// and the video is judged exactly as without audio.
func TestRunWithAudio(t *testing.T) {
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := Run(ctx, RunConfig{
		Pool:     Config{URL: srv.WHEP, DecodeEvery: 2, Audio: true, NACK: true},
		Criteria: Criteria{FPS: 30, Audio: true},
		N:        4,
		Rate:     20,
		Hold:     6 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("clip %.0f kbit/s\n%s", srv.ClipKbps, out.String())
	if !strings.Contains(out.String(), "audio: ") {
		t.Error("the summary has no audio line")
	}
	if rep.Connected != 4 || rep.Verified != 4 {
		t.Errorf("%d connected, %d verified; want 4 and 4", rep.Connected, rep.Verified)
	}
	for _, s := range rep.Sessions {
		// 96 kbit/s of Opus in 20 ms packets, plus RTP and SRTP overhead.
		if s.Window.AudioKbps < 40 || s.Window.AudioKbps > 200 {
			t.Errorf("session %d got %.0f kbit/s of audio, want about 100", s.ID, s.Window.AudioKbps)
		}
		lo, hi := 0.6*srv.ClipKbps, 1.4*srv.ClipKbps
		if s.Window.Kbps < lo || s.Window.Kbps > hi {
			t.Errorf("session %d got %.0f kbit/s of video; the clip is %.0f (audio counted as video?)", s.ID, s.Window.Kbps, srv.ClipKbps)
		}
	}
}
