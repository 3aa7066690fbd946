package vtranscode

import "fmt"

// TooLarge says why a w×h source is not decoded under maxArea (0: no
// limit), or "" when it may be: checked on the stream's SPS before a
// transcoder is made, so an 8K stream is refused before any picture
// buffer exists (the decoder's own limit, Config.MaxDecodeArea, is the
// second line).
func TooLarge(w, h, maxArea int) string {
	if maxArea <= 0 || w*h <= maxArea {
		return ""
	}
	return fmt.Sprintf("its pictures are %dx%d (%.1f megapixels), larger than the %.1f megapixels transcode.maxDecodeArea allows",
		w, h, float64(w*h)/1e6, float64(maxArea)/1e6)
}

// Job describes one transcode's work for its cost estimate: what it
// decodes and what it encodes, in pictures and pictures a second.
type Job struct {
	Codec      Codec
	InW, InH   int
	InFPS      float64
	OutW, OutH int
	OutFPS     float64
}

// PlanJob is the work a transcoder made with cfg does for a w×h source:
// the caps applied as the transcoder applies them.
func PlanJob(cfg Config, w, h int) Job {
	fps := cfg.FPS
	if fps <= 0 {
		fps = DefaultFPS
	}
	out := fps
	if cfg.MaxFPS > 0 && cfg.MaxFPS < fps {
		out = cfg.MaxFPS
	}
	ow, oh := OutputSize(w, h, cfg.MaxHeight)
	return Job{Codec: cfg.Codec, InW: w, InH: h, InFPS: fps, OutW: ow, OutH: oh, OutFPS: out}
}

// Kind names the job's cost model for the CPU budget's correction by
// measurement: decoders differ per codec, the encoder is always libx264
// ultrafast.
func (j Job) Kind() string { return "video " + j.Codec.String() + ">H.264" }

// Per megapixel a second, the share of one core decoding (by codec) and
// encoding (libx264 ultrafast, Constrained Baseline, swscale included)
// cost, from BenchmarkTranscode1080p60 on the reference machine (2 vCPU,
// "Oxide Virtual Turin-like Processor", 2026-12-07): 1080p60 with
// B-frames at 6 Mbit/s costs 43.0 % of one core transcoded at full size
// and 25.2 % capped to 720p30, the two equations these two figures
// solve (124.4 megapixels a second in; 124.4 or 27.6 out). They seed the
// estimate; the CPU budget corrects it, per codec, with what running
// transcoders measure (Stats.Load). H.265 has no figure of its own yet:
// its first transcode starts from H.264's and its measurement corrects
// the next.
const (
	decodeH264PerMpx = 0.00162
	decodeH265PerMpx = decodeH264PerMpx
	encodePerMpx     = 0.00184
)

// Estimate is the job's cost in shares of one core, before correction.
func (j Job) Estimate() float64 {
	in := float64(j.InW*j.InH) * j.InFPS / 1e6
	out := float64(j.OutW*j.OutH) * j.OutFPS / 1e6
	dec := decodeH264PerMpx
	if j.Codec == CodecH265 {
		dec = decodeH265PerMpx
	}
	return dec*in + encodePerMpx*out
}
