package ingest

import (
	"slices"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// Totals are counters that only grow for the life of the process: a path's
// ended publishers are included, so Prometheus counters never go back.
type Totals struct {
	IngestBytes  uint64 // H.264 bytes handed to the hub
	IngestFrames uint64 // access units handed to the hub
	// Frames dropped, by why: for viewers that were too slow, while
	// waiting for a decodable IDR after damage, and B-frames refused.
	DroppedSlowReader, DroppedDecodeError, DroppedBFrames uint64
	// DroppedSRTLate are the frames skipped to the next IDR because SRT
	// dropped packets that came later than srt.latency; they are not in
	// DroppedDecodeError.
	DroppedSRTLate       uint64
	DecodeErrors         uint64 // TS/H.264 problems skipped
	PacketsOut, BytesOut uint64 // sent to the path's viewers
	// Frames dropped for slow viewers, split by kind.
	DroppedVideo, DroppedAudio uint64
	// DroppedCongested is the part of DroppedVideo skipped to the next
	// IDR because a viewer's link reported heavy loss.
	DroppedCongested uint64
	// Audio: coded frames read from the TS, Opus frames handed to the
	// viewers, frames skipped as broken (demuxer and transcoder), and
	// the CPU time the transcoder spent.
	AudioFramesIn, AudioFramesOut, AudioErrors uint64
	TranscodeCPU                               time.Duration
	// Video transcoding (pkg/vtranscode): pictures encoded, pictures
	// dropped because the encoder fell behind, and its CPU time.
	VideoTranscodedFrames, VideoTranscodeDropped uint64
	VideoTranscodeCPU                            time.Duration
}

func (t *Totals) add(o Totals) {
	t.IngestBytes += o.IngestBytes
	t.IngestFrames += o.IngestFrames
	t.DroppedSlowReader += o.DroppedSlowReader
	t.DroppedDecodeError += o.DroppedDecodeError
	t.DroppedBFrames += o.DroppedBFrames
	t.DroppedSRTLate += o.DroppedSRTLate
	t.DecodeErrors += o.DecodeErrors
	t.PacketsOut += o.PacketsOut
	t.BytesOut += o.BytesOut
	t.DroppedVideo += o.DroppedVideo
	t.DroppedAudio += o.DroppedAudio
	t.DroppedCongested += o.DroppedCongested
	t.AudioFramesIn += o.AudioFramesIn
	t.AudioFramesOut += o.AudioFramesOut
	t.AudioErrors += o.AudioErrors
	t.TranscodeCPU += o.TranscodeCPU
	t.VideoTranscodedFrames += o.VideoTranscodedFrames
	t.VideoTranscodeDropped += o.VideoTranscodeDropped
	t.VideoTranscodeCPU += o.VideoTranscodeCPU
}

func (p *publisher) totals() Totals {
	var t Totals
	if pub := p.hubPub.Load(); pub != nil {
		hs := pub.Stats()
		t.IngestBytes, t.IngestFrames = hs.BytesIn, hs.FramesIn
		t.DroppedSlowReader = hs.FramesDropped
		t.DroppedVideo, t.DroppedAudio = hs.VideoFramesDropped, hs.AudioFramesDropped
		t.DroppedCongested = hs.CongestedFramesDropped
		t.PacketsOut, t.BytesOut = hs.PacketsOut, hs.BytesOut
		t.AudioFramesOut = hs.AudioFramesIn
	}
	if d := p.demux.Load(); d != nil {
		ds := d.Stats()
		t.DroppedDecodeError, t.DroppedBFrames = ds.DroppedAUs, ds.BFramesDropped
		t.DroppedSRTLate = ds.DroppedTransport
		t.DroppedDecodeError -= ds.DroppedTransport
		t.DecodeErrors = ds.DecodeErrors
		t.AudioFramesIn, t.AudioErrors = ds.AudioUnits, ds.AudioErrors
	}
	ts := p.audio.stats()
	t.AudioErrors += ts.Errors
	t.TranscodeCPU = ts.CPU
	vs, _ := p.video.tcs.stats()
	t.VideoTranscodedFrames, t.VideoTranscodeDropped, t.VideoTranscodeCPU = vs.FramesOut, vs.Dropped, vs.CPU
	return t
}

// PathStats is one path as the API and the metrics see it.
type PathStats struct {
	Path string
	// Publisher is nil while nobody publishes (a configured path, or one
	// whose publisher left within the last hour).
	Publisher *PublisherStats
	Readers   int
	Info      av.StreamInfo // the last known stream parameters
	// AudioIn and AudioOut name the audio codec read from the publisher and
	// the one sent to viewers ("Opus"); both "" without audio.
	AudioIn, AudioOut string
	// Transcode describes the live publisher's video transcoder; zero
	// while the path passes its video through.
	Transcode TranscodeStatus
	Totals    Totals
	// Problem is why the path's viewers get no picture; nil while they
	// do (refusals.go).
	Problem *Problem
	// Renditions are the live publisher's lower renditions (its ladder),
	// top first; none when the path has no ladder.
	Renditions []RungStats
}

// TranscodeStatus is a path's video transcoder as it runs.
type TranscodeStatus struct {
	Reason    string // why the path is transcoded
	FramesOut uint64
	// Latency is the mean time from a source picture's arrival to its
	// transcoded picture's hand-over to the hub.
	Latency time.Duration
}

// PublisherStats describes the connected publisher of a path.
type PublisherStats struct {
	Remote string
	Since  time.Time
	// Streaming is false for the moment between a publisher's claim and
	// its hub path's start.
	Streaming bool
	SRT       srt.Stats
}

// Stats returns every live (claimed), recently live and configured path,
// and those with a refusal, sorted by name.
func (m *Manager) Stats() []PathStats {
	m.mu.Lock()
	m.pruneLocked(time.Now())
	byName := make(map[string]*PathStats, len(m.live)+len(m.past))
	entry := func(name string) *PathStats {
		ps := byName[name]
		if ps == nil {
			ps = &PathStats{Path: name}
			byName[name] = ps
		}
		return ps
	}
	for name, h := range m.past {
		ps := entry(name)
		ps.Totals = h.totals
		ps.Info = h.info
		ps.AudioIn, ps.AudioOut = h.audioIn, h.audioOut
	}
	// Only a claimed path is live (connwatch.go): a connection that has
	// shown no picture yet is no path of the API's or the metrics', so
	// connections from anyone, on any name, add nothing here.
	live := make(map[string]*publisher, len(m.live))
	for name, p := range m.live {
		live[name] = p
		entry(name)
	}
	m.mu.Unlock()

	for _, name := range m.cfg.Keep() {
		entry(name)
	}
	// A publisher refused before it published left no history, yet its
	// path is where an operator looks for why: a stream refused for what
	// it carries is listed. Bytes that were not MPEG-TS at all are
	// listed only on a path known otherwise: anyone can send those on
	// any name.
	for name, pr := range m.problems.snapshot(time.Now()) {
		if _, known := byName[name]; known || pr.Reason != ReasonNotMPEGTS {
			entry(name).Problem = &pr
		}
	}
	// Socket and hub reads happen outside the manager's lock: the listen
	// callback must never wait behind a scrape.
	for name, p := range live {
		ps := entry(name)
		pub := p.hubPub.Load()
		ps.Publisher = &PublisherStats{Remote: p.conn.Remote(), Since: p.since, Streaming: pub != nil, SRT: p.conn.Stats()}
		if pub != nil {
			// The H.264 rendition's viewers watch the path too.
			ps.Readers = m.cfg.Hub.State(name).Readers
		}
		if info := p.info.Load(); info != nil {
			ps.Info = *info
		}
		ps.AudioIn, ps.AudioOut = p.audio.codecs()
		ps.Renditions = p.video.ladder.stats()
		if vs, why := p.video.tcs.stats(); why != "" {
			ps.Transcode = TranscodeStatus{Reason: why, FramesOut: vs.FramesOut}
			if vs.LatencyCount > 0 {
				ps.Transcode.Latency = vs.LatencySum / time.Duration(vs.LatencyCount)
			}
		}
		ps.Totals.add(p.totals())
	}
	out := make([]PathStats, 0, len(byName))
	for _, ps := range byName {
		out = append(out, *ps)
	}
	slices.SortFunc(out, func(a, b PathStats) int { return strings.Compare(a.Path, b.Path) })
	return out
}
