package main

import (
	"net/http"

	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

func (s *server) controlAPI() http.Handler {
	return api.Handler(api.Config{
		Source:   control{s},
		Token:    func() string { return s.config().API.Token },
		Throttle: s.httpThrottle,
		Logger:   s.log.With("component", "api"),
	})
}

// control adapts the hub, SRT and WHEP snapshots to the API's view.
type control struct{ s *server }

func (c control) Paths() []api.Path {
	conns := map[string]srt.ConnInfo{}
	for _, ci := range c.s.srt.Conns() {
		conns[ci.Path] = ci
	}
	var out []api.Path
	for _, p := range c.s.hub.Paths() {
		ap := api.Path{
			Name:         p.Name,
			Codec:        p.Info.Codec,
			Profile:      p.Info.Profile,
			Width:        p.Info.Width,
			Height:       p.Info.Height,
			FPS:          p.Info.FPS,
			IngestBytes:  p.BytesIn,
			IngestFrames: p.FramesIn,
			Readers:      p.Readers,
			Dropped:      p.FramesDropped,
		}
		if ds, ok := c.s.demux.stats(p.Name); ok {
			ap.Dropped += ds.DroppedAUs
		}
		if p.Publisher {
			pub := &api.Publisher{Remote: p.Remote, Since: p.Since}
			if ci, ok := conns[p.Name]; ok {
				pub.RTTMs = ci.Stats.RTTMs
				pub.PacketsLost = ci.Stats.PacketsLost
				ap.IngestBitrate = ci.Stats.RecvMbps * 1e6
			}
			ap.Publisher = pub
		}
		out = append(out, ap)
	}
	return out
}

func (c control) Sessions() []api.Session {
	infos := c.s.whep.Sessions()
	out := make([]api.Session, 0, len(infos))
	for _, si := range infos {
		out = append(out, api.Session{
			ID: si.ID, Path: si.Path, Remote: si.Remote, State: si.State, Since: si.Since,
			Packets: si.PacketsSent, Bytes: si.BytesSent, Dropped: si.Dropped,
		})
	}
	return out
}

func (c control) KickSession(id string) bool     { return c.s.whep.Kick(id) }
func (c control) KickPublisher(path string) bool { return c.s.srt.Kick(path) }
