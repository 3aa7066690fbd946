package hub

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// GOPCacheLimits bound a path's last-GOP cache. The cache exists so a new
// viewer starts at once instead of waiting up to a GOP for the next IDR;
// encoders' GOPs run from 1 s to OBS Simple mode's 8.3 s (250 frames), so
// the bound is in time, and in bytes so a high-bitrate or hostile stream
// cannot make one path hold more than that. A GOP past either bound stops
// being cached for the rest of it: viewers joining then wait for the next
// IDR. Zero in either turns the cache off.
type GOPCacheLimits struct {
	Duration time.Duration
	Bytes    int
}

// The default limits: 10 s holds an 8.3 s GOP with room to spare; 32 MiB
// is 10 s at about 25 Mbit/s counting the RTP payloads cut from each
// picture (see frameBytes).
const (
	DefaultGOPCacheDuration = 10 * time.Second
	DefaultGOPCacheBytes    = 32 << 20
	// DefaultGOPCacheFrames is the backstop in video frames (30 s at
	// 60 fps), for streams whose PTS does not advance.
	DefaultGOPCacheFrames = 1800
)

// DefaultGOPCacheLimits are the limits of a path whose Config.GOPCache is
// nil.
var DefaultGOPCacheLimits = GOPCacheLimits{Duration: DefaultGOPCacheDuration, Bytes: DefaultGOPCacheBytes}

// frameOverhead is what a cached frame costs besides its data: the Frame
// slot, the access unit or audio struct and their slice headers. Counting
// it means a flood of tiny frames is bounded by the byte limit too.
const frameOverhead = 256

// frameBytes is what a cached access unit holds: its NAL units and the
// RTP payloads cut from them, which are a copy.
func frameBytes(au *av.AccessUnit) int {
	n := au.Size + frameOverhead
	for _, pl := range au.Payloads {
		n += len(pl)
	}
	return n
}

func (h *Hub) gopLimits(name string) GOPCacheLimits {
	if h.cfg.GOPCache == nil {
		return DefaultGOPCacheLimits
	}
	return h.cfg.GOPCache(baseName(name))
}

// resetCache empties the cache; clear drops the references so old frames
// can be collected. Called with mu held.
func (p *path) resetCache() {
	clear(p.cache)
	p.cache = p.cache[:0]
	p.cacheVideo = 0
	p.cacheSource = 0
	p.cacheBytes = 0
	p.cacheValid = false
}

// fits reports whether a frame of n bytes at pts may join the cached GOP;
// when not, it drops the cache for the rest of the GOP and warns once per
// generation naming the setting. Called with mu held and the cache valid.
func (p *path) fits(pts int64, n int) bool {
	over := ""
	switch {
	case p.cacheBytes+n > p.limits.Bytes:
		over = "gopCacheBytes"
	case pts-p.cache[0].Video.PTS > p.limits.Duration.Nanoseconds()*90/1e6:
		over = "gopCacheDuration"
	}
	if over == "" {
		return true
	}
	if !p.cacheWarned {
		p.cacheWarned = true
		p.log.Warn("GOP outgrew the cache; viewers joining during the rest of it wait for the next keyframe "+
			"(raise "+over+" for the path, or shorten the encoder's keyframe interval)",
			"path", p.name, "setting", over, "frames", p.cacheVideo, "bytes", p.cacheBytes,
			"gopCacheDuration", p.limits.Duration.String(), "gopCacheBytes", p.limits.Bytes)
	}
	p.resetCache()
	return false
}

// updateCache keeps the last GOP. Called with mu held.
func (p *path) updateCache(au *av.AccessUnit) {
	switch {
	case au.IDR:
		p.sawIDR = true
		p.resetCache()
		n := frameBytes(au)
		if p.limits.Duration <= 0 || n > p.limits.Bytes {
			return
		}
		p.cache = append(p.cache, Frame{Video: au, CatchUp: true})
		p.cacheVideo = 1
		p.cacheBytes = n
		p.cacheValid = true
		// Audio that arrived ahead of its IDR, oldest first.
		for i := range recentAudioFrames {
			af := p.recentAudio[(p.recentNext+i)%recentAudioFrames]
			if af != nil && af.PTS >= au.PTS && len(p.cache)-1 < p.audioCacheMax {
				p.cache = append(p.cache, Frame{Audio: af, CatchUp: true})
				p.cacheBytes += len(af.Data) + frameOverhead
			}
		}
		p.cacheRecentSource(au.PTS)
	case !p.cacheValid:
	case p.cacheVideo >= p.cacheMax:
		// A GOP this long cannot be replayed into a queue; a new reader
		// waits for the next IDR instead.
		p.resetCache()
	default:
		if n := frameBytes(au); p.fits(au.PTS, n) {
			p.cache = append(p.cache, Frame{Video: au, CatchUp: true})
			p.cacheVideo++
			p.cacheBytes += n
		}
	}
}

// updateAudioCache adds af to the cached GOP when it plays at or after the
// IDR. Called with mu held.
func (p *path) updateAudioCache(af *av.AudioFrame) {
	p.recentAudio[p.recentNext] = af
	p.recentNext = (p.recentNext + 1) % recentAudioFrames
	switch {
	case !p.cacheValid:
	case af.PTS < p.cache[0].Video.PTS:
		// Muxed late: it plays before the picture a new viewer starts at.
	case len(p.cache)-p.cacheVideo-p.cacheSource >= p.audioCacheMax:
		p.resetCache()
	default:
		if n := len(af.Data) + frameOverhead; p.fits(af.PTS, n) {
			p.cache = append(p.cache, Frame{Audio: af, CatchUp: true})
			p.cacheBytes += n
		}
	}
}
