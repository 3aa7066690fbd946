package loadgen

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Criteria decide whether a session received the stream it should have.
type Criteria struct {
	FPS      float64 // frame rate of the published stream; 0 means 30
	MinRatio float64 // share of FPS a viewer must get; 0 means 0.9
	MaxLoss  float64 // largest tolerated lost/expected packets; 0 means 0.001

	// Audio requires the audio track too: answered by the server, at
	// MinRatio of AudioPPS, within MaxLoss. Video is judged as without it.
	Audio    bool
	AudioPPS float64 // Opus packets per second sent; 0 means 50 (20 ms frames)
}

func (c Criteria) fps() float64      { return orDefault(c.FPS, 30) }
func (c Criteria) minRatio() float64 { return orDefault(c.MinRatio, 0.9) }
func (c Criteria) maxLoss() float64  { return orDefault(c.MaxLoss, 0.001) }
func (c Criteria) audioPPS() float64 { return orDefault(c.AudioPPS, 50) }

func orDefault(v, d float64) float64 {
	if v <= 0 {
		return d
	}
	return v
}

// Window is what one session received between two snapshots.
type Window struct {
	Verified bool
	Reason   string // why not verified
	FPS      float64
	Kbps     float64 // delivered, SRTP packets including headers
	Loss     float64 // lost / (received + lost)
	Packets  uint64
	Gaps     uint64

	// Video pauses longer than stallGap (200 ms): reported, not judged,
	// since a starved generator can cause them too.
	Stalls uint64

	// Feedback the viewer sent over the window (browser mode; a decoding
	// viewer's NACKs come from pion, uncounted).
	ReportsSent, NACKedSent, PLIsSent, RTCPUnsent uint64

	// The audio track over the same window.
	AudioPPS     float64
	AudioKbps    float64
	AudioLoss    float64
	AudioPackets uint64
	AudioBytes   uint64
	AudioGaps    uint64
}

// Evaluate judges a session over [a, b]. decode adds the checks only a
// decoding session can make: a picture size was parsed, the first picture
// was an IDR and, with audio, SRTP authenticated the audio packets.
func Evaluate(a, b Snapshot, decode bool, c Criteria) Window {
	var w Window
	dt := b.At.Sub(a.At).Seconds()
	if dt <= 0 {
		w.Reason = "empty window"
		return w
	}
	w.Packets = b.Packets - a.Packets
	if b.SeqGaps > a.SeqGaps {
		w.Gaps = b.SeqGaps - a.SeqGaps
	}
	w.FPS = float64(b.Frames-a.Frames) / dt
	w.Stalls = b.Stalls - a.Stalls
	w.ReportsSent = b.ReportsSent - a.ReportsSent
	w.NACKedSent = b.NACKedSent - a.NACKedSent
	w.PLIsSent = b.PLIsSent - a.PLIsSent
	w.RTCPUnsent = b.RTCPUnsent - a.RTCPUnsent
	w.Kbps = float64(b.Bytes-a.Bytes) * 8 / dt / 1000
	if exp := w.Packets + w.Gaps; exp > 0 {
		w.Loss = float64(w.Gaps) / float64(exp)
	}
	w.AudioPackets = b.AudioPackets - a.AudioPackets
	w.AudioBytes = b.AudioBytes - a.AudioBytes
	if b.AudioGaps > a.AudioGaps {
		w.AudioGaps = b.AudioGaps - a.AudioGaps
	}
	w.AudioPPS = float64(w.AudioPackets) / dt
	w.AudioKbps = float64(w.AudioBytes) * 8 / dt / 1000
	if exp := w.AudioPackets + w.AudioGaps; exp > 0 {
		w.AudioLoss = float64(w.AudioGaps) / float64(exp)
	}
	switch {
	case !b.Alive:
		w.Reason = "session ended"
	case w.Packets == 0:
		w.Reason = "no media"
	case w.FPS < c.minRatio()*c.fps():
		w.Reason = fmt.Sprintf("%.1f fps < %.0f%% of %.0f", w.FPS, 100*c.minRatio(), c.fps())
	case w.Loss > c.maxLoss():
		w.Reason = fmt.Sprintf("loss %.3f%% > %.3f%%", 100*w.Loss, 100*c.maxLoss())
	case c.Audio && !b.AudioAnswered:
		w.Reason = "the answer has no audio (does the path publish audio?)"
	case c.Audio && w.AudioPPS < c.minRatio()*c.audioPPS():
		w.Reason = fmt.Sprintf("audio %.1f packets/s < %.0f%% of %.0f", w.AudioPPS, 100*c.minRatio(), c.audioPPS())
	case c.Audio && w.AudioLoss > c.maxLoss():
		w.Reason = fmt.Sprintf("audio loss %.3f%% > %.3f%%", 100*w.AudioLoss, 100*c.maxLoss())
	case decode && b.IDRFirst < 0:
		w.Reason = "first decoded picture was not an IDR"
	case decode && (b.Width == 0 || b.Height == 0):
		w.Reason = "no SPS decoded (picture size unknown)"
	case decode && b.DecodedFrames == 0:
		w.Reason = "no picture decoded"
	case decode && c.Audio && b.AudioDecrypted == 0:
		w.Reason = "no audio packet decrypted"
	default:
		w.Verified = true
	}
	return w
}

// Quantile returns the q-quantile (0..1) of ds by nearest rank; 0 when ds
// is empty. ds is not modified.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
