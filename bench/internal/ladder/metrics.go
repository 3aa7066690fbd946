package ladder

import (
	"context"
	"fmt"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"

	"github.com/srtwhep/srtwhep/internal/promscrape"
)

// Metric names the ladder reads from srtwhep; other servers lack them and
// the ladder shows "n/a".
const (
	MetricFramesDropped = "srtwhep_path_frames_dropped_total"
	MetricSRTRTT        = "srtwhep_srt_rtt_seconds"
	// The media socket's kernel drops: viewers' RTCP lost on a full
	// receive buffer, and sends refused on a full send buffer.
	MetricReceiveDrops = "srtwhep_webrtc_udp_receive_drops_total"
	MetricSendRefused  = "srtwhep_webrtc_udp_datagrams_refused_total"
)

// Sample aggregates the series of one metric: their sum and maximum, and
// the sum per label value ("reason=congested"), so one reason of a
// counter can be read apart.
type Sample struct {
	Sum, Max float64
	Found    bool
	ByLabel  map[string]float64
}

// Label is the sum of the series whose label name has value.
func (s Sample) Label(name, value string) float64 { return s.ByLabel[name+"="+value] }

// Scrape fetches url and aggregates the named counters and gauges.
func Scrape(ctx context.Context, c *http.Client, url string, names ...string) (map[string]Sample, error) {
	fams, err := promscrape.Families(ctx, c, url)
	if err != nil {
		return nil, fmt.Errorf("ladder: %w", err)
	}
	out := make(map[string]Sample, len(names))
	for _, n := range names {
		if mf, ok := fams[n]; ok {
			out[n] = aggregate(mf)
		}
	}
	return out, nil
}

func aggregate(mf *dto.MetricFamily) Sample {
	var s Sample
	for _, m := range mf.GetMetric() {
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue // summaries and histograms have no single value to add
		}
		if !s.Found || v > s.Max {
			s.Max = v
		}
		if !math.IsNaN(v) {
			s.Sum += v
			for _, lp := range m.GetLabel() {
				if s.ByLabel == nil {
					s.ByLabel = map[string]float64{}
				}
				s.ByLabel[lp.GetName()+"="+lp.GetValue()] += v
			}
		}
		s.Found = true
	}
	return s
}
