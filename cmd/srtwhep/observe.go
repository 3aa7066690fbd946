package main

import (
	"runtime/debug"
	"sync"

	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// demuxers remembers the live demuxer of each path so metrics can read its
// decode-error counters at scrape time.
type demuxers struct {
	mu sync.Mutex
	m  map[string]*tsdemux.Demuxer
}

func (d *demuxers) set(path string, dm *tsdemux.Demuxer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*tsdemux.Demuxer{}
	}
	d.m[path] = dm
}

func (d *demuxers) remove(path string, dm *tsdemux.Demuxer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[path] == dm {
		delete(d.m, path)
	}
}

func (d *demuxers) stats(path string) (tsdemux.Stats, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dm, ok := d.m[path]
	if !ok {
		return tsdemux.Stats{}, false
	}
	return dm.Stats(), true
}

// metricsSources adapts the components' snapshots to the metrics package,
// which imports none of them.
func (s *server) metricsSources() metrics.Sources {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	return metrics.Sources{
		Build:     metrics.BuildInfo{Version: version},
		Profiling: s.cfg.Metrics.Pprof,
		Log:       s.log.With("component", "metrics"),
		Paths: func() []metrics.PathSample {
			traffic := s.whep.Stats().ByPath
			var out []metrics.PathSample
			for _, p := range s.hub.Paths() {
				ps := metrics.PathSample{
					Path:          p.Name,
					PublisherUp:   p.Publisher,
					Readers:       p.Readers,
					IngestBytes:   p.BytesIn,
					IngestFrames:  p.FramesIn,
					FramesDropped: map[string]uint64{"slow_reader": p.FramesDropped},
					BytesOut:      traffic[p.Name].Bytes,
					PacketsOut:    traffic[p.Name].Packets,
					Width:         p.Info.Width,
					Height:        p.Info.Height,
					FPS:           p.Info.FPS,
				}
				if ds, ok := s.demux.stats(p.Name); ok {
					ps.FramesDropped["decode_error"] = ds.DroppedAUs
					ps.FramesDropped["bframes"] = ds.BFramesDropped
				}
				out = append(out, ps)
			}
			return out
		},
		SRT: func() []metrics.SRTSample {
			var out []metrics.SRTSample
			for _, c := range s.srt.Conns() {
				ss := metrics.SRTSample{
					Path:                     c.Path,
					RTTSeconds:               c.Stats.RTTMs / 1000,
					ReceiveRateBitsPerSecond: c.Stats.RecvMbps * 1e6,
					PacketsLost:              uint64(max(c.Stats.PacketsLost, 0)),
					PacketsRetransmitted:     uint64(max(c.Stats.PacketsRetransmitted, 0)),
					PacketsDropped:           uint64(max(c.Stats.PacketsDropped, 0)),
					BytesReceived:            uint64(max(c.Stats.Bytes, 0)),
				}
				if ds, ok := s.demux.stats(c.Path); ok {
					ss.DecodeErrors = ds.DecodeErrors
				}
				out = append(out, ss)
			}
			return out
		},
		WebRTC: func() metrics.WebRTCSample {
			st := s.whep.Stats()
			states := map[string]int{"connecting": 0, "connected": 0}
			for state, n := range st.StateCounts {
				if state == "connected" {
					states["connected"] += n
				} else {
					states["connecting"] += n
				}
			}
			return metrics.WebRTCSample{
				SessionsByState:    states,
				HandshakesInFlight: st.HandshakesInFlight,
				HandshakesFailed:   st.HandshakeFailures,
				SessionsTotal:      st.SessionsOpened,
				RejectedTotal:      s.rejects.snapshot(),
			}
		},
	}
}
