package avcodec

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// Decoders and encoders run on their caller's goroutine: FFmpeg threads
// are not Go's, so this checks only that no Go goroutine is left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every decoder srtwhep needs is in the linked libavcodec; a codec it
// does not know is refused by name, not opened as another.
func TestDecodersOpen(t *testing.T) {
	Quiet()
	for _, c := range []Codec{AAC, MP2, MP3, H264, HEVC} {
		d, err := OpenDecoder(c, DecoderConfig{SampleRate: 48000, Clock90k: true})
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		d.Free()
		d.Free() // safe twice: the pointers are cleared
	}
	if d, err := OpenDecoder(Codec(99), DecoderConfig{}); err == nil || !strings.Contains(err.Error(), "codec 99") {
		t.Errorf("Codec(99): %v, want a refusal naming it", err)
		if d != nil {
			d.Free()
		}
	}
}

// Bytes that are no H.264 give no picture and, at worst, an FFmpeg
// error with FFmpeg's text.
func TestDecoderGarbage(t *testing.T) {
	Quiet()
	d, err := OpenDecoder(H264, DecoderConfig{Clock90k: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	garbage := []byte{0, 0, 0, 1, 0x65, 0xff, 0xee, 0xdd, 0, 0, 0, 1, 0x41, 1, 2, 3}
	for range 3 {
		if err := d.Send(garbage, 0); err != nil {
			var fe Error
			if !errors.As(err, &fe) || err.Error() == "" {
				t.Fatalf("Send: %v (%T), want an avcodec.Error with text", err, err)
			}
			continue
		}
		f, err := d.Receive()
		if f != nil {
			w, h := f.Size()
			t.Fatalf("a picture from garbage: %dx%d", w, h)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("an FFmpeg error without text")
		}
	}
}

// libx264 opens with the browser settings, and a bad preset is an error
// naming the option.
func TestEncoderOpens(t *testing.T) {
	p := EncoderParams{Width: 64, Height: 48, FPS: 30, Bitrate: 300_000, Keyint: 60, Preset: "ultrafast"}
	e, err := OpenEncoder(p)
	if err != nil {
		t.Fatal(err)
	}
	if e.Params() != p {
		t.Errorf("Params() = %+v, want %+v", e.Params(), p)
	}
	e.Free()
	p.Preset = "no-such-preset"
	if e, err := OpenEncoder(p); err == nil {
		e.Free()
		t.Error("an unknown preset opened")
	} else if !strings.Contains(err.Error(), "no-such-preset") && !strings.Contains(err.Error(), "libx264") {
		t.Errorf("unknown preset: %v", err)
	}
}
