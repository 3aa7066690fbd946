package config

import "time"

// The ranges of a path's memory bounds. A unit cap below 256 KiB would cut
// real 1080p keyframes; above 64 MiB it no longer bounds anything a small
// VPS can afford per publisher. The GOP cache may be off (0) or hold up to
// a minute and 512 MiB.
const (
	minUnitBytes     = 256 << 10
	maxUnitBytes     = 64 << 20
	maxGOPCacheTime  = time.Minute
	maxGOPCacheBytes = 512 << 20
	// maxPulls: each pull is a libsrt socket and its buffers; beyond ten
	// thousand an edge runs out of file descriptors and memory first.
	maxPulls = 10000
	// maxPublishers: the same for publishers, each also a demuxer.
	maxPublishers = 10000
)

// pathBounds checks the per-publisher memory bounds of one path entry.
func (v *validator) pathBounds(key string, p Path, def *Path) {
	if def == nil || p.MaxUnitBytes != def.MaxUnitBytes {
		if p.MaxUnitBytes < minUnitBytes || p.MaxUnitBytes > maxUnitBytes {
			v.fail(key+".maxUnitBytes", "%d is outside %d to %d; use e.g. 4194304 (4 MiB, above any real 4K keyframe)", p.MaxUnitBytes, minUnitBytes, maxUnitBytes)
		}
	}
	if def == nil || p.GOPCacheDuration != def.GOPCacheDuration {
		if p.GOPCacheDuration < 0 || time.Duration(p.GOPCacheDuration) > maxGOPCacheTime {
			v.fail(key+".gopCacheDuration", "%s is outside 0 to %s; use e.g. 10s (an 8.3 s OBS GOP fits; 0 turns the cache off)", p.GOPCacheDuration, Duration(maxGOPCacheTime))
		}
	}
	if def == nil || p.GOPCacheBytes != def.GOPCacheBytes {
		if p.GOPCacheBytes < 0 || p.GOPCacheBytes > maxGOPCacheBytes {
			v.fail(key+".gopCacheBytes", "%d is outside 0 to %d; use e.g. 33554432 (32 MiB: 10 s at 25 Mbit/s; 0 turns the cache off)", p.GOPCacheBytes, maxGOPCacheBytes)
		}
	}
}
