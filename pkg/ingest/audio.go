package ingest

import (
	"log/slog"
	"sync"

	"github.com/srtwhep/srtwhep/pkg/audio"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// audioPipeline turns the publisher's audio track into Opus for the hub,
// once per path (never per viewer), and hands the hub the units as they
// came too, for readers that pass the stream on (SRT readers). track and
// write run on the publisher's goroutine, in the demuxer's callbacks;
// stats and codecs may be called from anywhere. A track the transcoder
// cannot take is refused with one warning and video goes on; its source
// units still flow, since passing them on needs no decoder.
type audioPipeline struct {
	pub      *hub.Publisher
	settings AudioSettings
	log      *slog.Logger

	mu       sync.Mutex
	tc       *audio.Transcoder // nil: no audio track, refused, or off
	src      *av.AudioTrack    // the track source units carry; nil while off; only the publisher's goroutine touches it
	past     audio.Stats       // of transcoders replaced by a new track
	in, out  string            // codec names for the API and metrics
	warnedOn bool              // the audio: off notice was logged
}

func (a *audioPipeline) init(pub *hub.Publisher, s AudioSettings, log *slog.Logger) {
	a.pub, a.settings, a.log = pub, s, log
}

// found is the demuxer's OnAudioFound, called before any media: viewers
// that join before the first audio frame are offered audio too.
func (a *audioPipeline) found(av.AudioCodec) {
	if !a.settings.Off {
		a.pub.SetAudio(true)
		a.pub.SetSourceAudio(true)
	}
}

// track is the demuxer's OnAudioTrack: a first track, or new parameters.
func (a *audioPipeline) track(t av.AudioTrack) {
	a.closeTranscoder()
	if !a.settings.Off {
		a.src = &t
	}
	if a.settings.Off {
		if !a.warnedOn {
			a.warnedOn = true
			a.log.Info("audio track not sent: audio is off for this path", "codec", t.Codec.String())
		}
		return
	}
	tc, err := audio.New(t, audio.Config{Logger: a.log, Bitrate: a.settings.Bitrate}, a.pub.WriteAudio)
	if err != nil {
		a.pub.SetAudio(false)
		a.log.Warn("audio track refused; video continues without sound", "codec", t.Codec.String(),
			"sample_rate", t.SampleRate, "err", err, "fix", "send AAC (-c:a aac) or Opus (-c:a libopus) at 48 or 44.1 kHz")
		return
	}
	a.mu.Lock()
	a.tc, a.in, a.out = tc, t.Codec.String(), "Opus"
	a.mu.Unlock()
	a.pub.SetAudio(true)
	mode := "transcoded to Opus"
	if tc.Passthrough() {
		mode = "passed through"
	}
	a.log.Info("audio", "codec", t.Codec.String(), "sample_rate", t.SampleRate, "channels", t.Channels, "mode", mode)
}

// write is the demuxer's OnAudio.
func (a *audioPipeline) write(u av.AudioUnit) {
	// Only this goroutine replaces tc, so reading it without the lock is
	// safe here.
	if tc := a.tc; tc != nil {
		tc.Write(u)
	}
	if a.src != nil {
		u.Track = a.src
		a.pub.WriteSourceAudio(&u)
	}
}

func (a *audioPipeline) closeTranscoder() {
	a.mu.Lock()
	tc := a.tc
	a.tc = nil
	if tc != nil {
		st := tc.Stats()
		a.past.FramesIn += st.FramesIn
		a.past.FramesOut += st.FramesOut
		a.past.Errors += st.Errors
		a.past.CPU += st.CPU
	}
	a.mu.Unlock()
	if tc != nil {
		tc.Close()
	}
}

// close ends the pipeline with the publisher; the codec names stay for the
// path's statistics.
func (a *audioPipeline) close() { a.closeTranscoder() }

func (a *audioPipeline) stats() audio.Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.past
	if a.tc != nil {
		cur := a.tc.Stats()
		st.FramesIn += cur.FramesIn
		st.FramesOut += cur.FramesOut
		st.Errors += cur.Errors
		st.CPU += cur.CPU
	}
	return st
}

func (a *audioPipeline) codecs() (in, out string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.in, a.out
}
