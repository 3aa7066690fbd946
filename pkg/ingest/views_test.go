package ingest

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// TestViews: the API and the metrics read the same Stats; this pins how
// the counters map onto each (which drops the API sums, how the metrics
// split the slow-reader drops from the congested ones) and the SRT view of
// a live publisher, with its recommended latency.
func TestViews(t *testing.T) {
	r := newRig(t, Config{})
	r.m.mu.Lock()
	r.m.past["live/old"] = &history{lastSeen: time.Now(), info: clipInfo, totals: Totals{IngestBytes: 1000, IngestFrames: 50,
		DroppedSlowReader: 3, DroppedDecodeError: 4, DroppedSRTLate: 5, DroppedBFrames: 6,
		DroppedVideo: 10, DroppedCongested: 7, DroppedAudio: 8, PacketsOut: 90, BytesOut: 9000}}
	r.m.mu.Unlock()
	c := newMemConn("live/v", 4, clip(t, "h264.ts"))
	c.pauseAt = videoPES(c.data)[5]
	done := r.serve(t, c)
	<-c.paused

	got := map[string]api.Path{}
	for _, p := range r.m.APIPaths() {
		got[p.Name] = p
	}
	want := api.Path{Name: "live/old", Codec: "H264", Profile: "Constrained Baseline", Width: 320, Height: 240, FPS: 25,
		IngestBytes: 1000, IngestFrames: 50, Dropped: 3 + 4 + 5, Renditions: []api.Rendition{}}
	if g := got["live/old"]; g.Publisher != nil || g.Audio != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("API path\n%+v, want\n%+v", g, want)
	}
	if g := got["live/v"]; g.Publisher == nil || g.Publisher.Remote != c.remote || g.Publisher.RTTMs != 40 {
		t.Errorf("API path of the live publisher: %+v (publisher %+v)", g, g.Publisher)
	}

	var old metrics.PathSample
	for _, s := range r.m.PathSamples() {
		if s.Path == "live/old" {
			old = s
		} else if s.Path != "live/v" || !s.PublisherUp {
			t.Errorf("sample %+v, want live/v up", s)
		}
	}
	wantDropped := map[string]uint64{"slow_reader": 10 - 7, "congested": 7, "decode_error": 4, "srt_late": 5, "bframes": 6}
	if old.PublisherUp || !maps.Equal(old.FramesDropped, wantDropped) || old.AudioFramesDropped != 8 ||
		old.PacketsOut != 90 || old.BytesOut != 9000 || old.Width != 320 || old.FPS != 25 {
		t.Errorf("metrics sample %+v, want drops %v", old, wantDropped)
	}

	links := r.m.SRTSamples()
	// 3 RTTs of 40 ms at no loss is the 120 ms in force.
	wantSRT := metrics.SRTSample{Path: "live/v", RTTSeconds: 0.04, BytesReceived: uint64(c.pauseAt),
		LatencySeconds: 0.12, RecommendedLatencySeconds: 0.12}
	if len(links) != 1 || links[0] != wantSRT {
		t.Errorf("SRT samples %+v, want only %+v", links, wantSRT)
	}
	r.m.Kick("live/v")
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}
