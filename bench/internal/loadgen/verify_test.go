package loadgen

import (
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Snapshot{At: t0, Packets: 100, Bytes: 100000, Frames: 10, Alive: true}
	good := Snapshot{At: t0.Add(10 * time.Second), Packets: 2900, Bytes: 100000 + 3_000_000, Frames: 310, Alive: true,
		Width: 1280, Height: 720, IDRFirst: 1, DecodedFrames: 300}
	c := Criteria{FPS: 30}

	w := Evaluate(a, good, true, c)
	if !w.Verified || w.FPS != 30 || w.Kbps != 2400 || w.Packets != 2800 {
		t.Errorf("good session: %+v", w)
	}

	cases := []struct {
		name   string
		edit   func(*Snapshot)
		decode bool
		reason string
	}{
		{"ended", func(s *Snapshot) { s.Alive = false }, false, "ended"},
		{"no media", func(s *Snapshot) { s.Packets, s.Frames = 100, 10 }, false, "no media"},
		{"slow", func(s *Snapshot) { s.Frames = 10 + 260 }, false, "fps"},
		{"lossy", func(s *Snapshot) { s.SeqGaps = 10 }, false, "loss"},
		{"not IDR first", func(s *Snapshot) { s.IDRFirst = -1 }, true, "IDR"},
		{"no SPS", func(s *Snapshot) { s.Width = 0 }, true, "SPS"},
	}
	for _, tc := range cases {
		b := good
		tc.edit(&b)
		w := Evaluate(a, b, tc.decode, c)
		if w.Verified || !strings.Contains(w.Reason, tc.reason) {
			t.Errorf("%s: verified=%v reason=%q, want not verified mentioning %q", tc.name, w.Verified, w.Reason, tc.reason)
		}
	}
	// Light sessions know nothing of SPS or IDRs and are not judged on them.
	b := good
	b.Width, b.IDRFirst = 0, 0
	if w := Evaluate(a, b, false, c); !w.Verified {
		t.Errorf("light session failed on decode-only checks: %s", w.Reason)
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if got := Quantile(ds, 0.5); got != 5 {
		t.Errorf("median = %v, want 5", got)
	}
	if got := Quantile(ds, 0.95); got != 10 {
		t.Errorf("p95 = %v, want 10", got)
	}
	if ds[0] != 5 {
		t.Error("Quantile sorted its input")
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of nothing is not 0")
	}
}

func TestEvaluateAudio(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Snapshot{At: t0, Packets: 100, Bytes: 100000, Frames: 10, Alive: true, AudioPackets: 20, AudioBytes: 3000}
	good := Snapshot{At: t0.Add(10 * time.Second), Packets: 2900, Bytes: 100000 + 3_000_000, Frames: 310, Alive: true,
		Width: 1280, Height: 720, IDRFirst: 1, DecodedFrames: 300,
		AudioAnswered: true, AudioPackets: 520, AudioBytes: 3000 + 125_000, AudioDecrypted: 500}
	c := Criteria{FPS: 30, Audio: true}

	w := Evaluate(a, good, true, c)
	if !w.Verified || w.AudioPPS != 50 || w.AudioKbps != 100 || w.AudioPackets != 500 || w.Kbps != 2400 {
		t.Errorf("good session: %+v", w)
	}
	cases := []struct {
		name   string
		edit   func(*Snapshot)
		decode bool
		reason string
	}{
		{"not answered", func(s *Snapshot) { s.AudioAnswered = false }, false, "no audio"},
		{"no audio", func(s *Snapshot) { s.AudioPackets = 20 }, false, "audio 0.0 packets/s"},
		{"thin audio", func(s *Snapshot) { s.AudioPackets = 20 + 440 }, false, "audio 44.0 packets/s"},
		{"lossy audio", func(s *Snapshot) { s.AudioGaps = 5 }, false, "audio loss"},
		{"not decrypted", func(s *Snapshot) { s.AudioDecrypted = 0 }, true, "decrypted"},
		// Video is still judged first and as before.
		{"slow video", func(s *Snapshot) { s.Frames = 10 + 260 }, false, "fps"},
	}
	for _, tc := range cases {
		b := good
		tc.edit(&b)
		w := Evaluate(a, b, tc.decode, c)
		if w.Verified || !strings.Contains(w.Reason, tc.reason) {
			t.Errorf("%s: verified=%v reason=%q, want not verified mentioning %q", tc.name, w.Verified, w.Reason, tc.reason)
		}
	}
	// Without Criteria.Audio a session with no audio at all is fine.
	b := good
	b.AudioAnswered, b.AudioPackets, b.AudioDecrypted = false, a.AudioPackets, 0
	if w := Evaluate(a, b, true, Criteria{FPS: 30}); !w.Verified {
		t.Errorf("video-only criteria failed on audio: %s", w.Reason)
	}
}
