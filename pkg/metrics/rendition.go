package metrics

import "github.com/prometheus/client_golang/prometheus"

// RenditionSample is the paths' ladders and the viewers' moves between
// their renditions at scrape time.
type RenditionSample struct {
	Renditions []Rendition
	// SwitchesUp and SwitchesDown count every viewer's moves, for the life
	// of the process.
	SwitchesUp, SwitchesDown uint64
}

// Rendition is one lower rendition of a path (a rung of its ladder).
type Rendition struct {
	Path, Name string // Name: "360p"
	Viewers    int
	Running    bool
	// CPUCores is its transcoder's measured share of one core over the
	// last seconds; 0 while it does not run.
	CPUCores float64
}

// renditionCollector exports RenditionSample. It is apart from the main
// table because its series are per rendition, not per path.
type renditionCollector struct {
	src                          func() RenditionSample
	viewers, running, cpu, moves *prometheus.Desc
}

func newRenditionCollector(src func() RenditionSample) *renditionCollector {
	l := []string{"path", "rendition"}
	return &renditionCollector{
		src: src,
		viewers: prometheus.NewDesc("srtwhep_rendition_viewers",
			"Viewers switched to a lower rendition of a path (renditions), whose transcoder runs while it has any and 30 s after.", l, nil),
		running: prometheus.NewDesc("srtwhep_rendition_running",
			"1 while the rendition's transcoder runs; 0 when nobody watches it (a path whose viewers all keep up runs none).", l, nil),
		cpu: prometheus.NewDesc("srtwhep_rendition_cpu_cores",
			"The rendition's transcoder's measured share of one core over its last seconds (decode, scale, libx264); 0 while it does not run.", l, nil),
		moves: prometheus.NewDesc("srtwhep_rendition_switches_total",
			"Viewers moved between renditions at a keyframe, by direction: down when their bandwidth estimate fell below what theirs needs, up after a while of headroom (or as their player pinned).", []string{"direction"}, nil),
	}
}

func (c *renditionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.viewers
	ch <- c.running
	ch <- c.cpu
	ch <- c.moves
}

func (c *renditionCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src()
	seen := map[[2]string]bool{}
	for _, r := range s.Renditions {
		k := [2]string{labelValue(r.Path), labelValue(r.Name)}
		if seen[k] {
			continue
		}
		seen[k] = true
		ch <- prometheus.MustNewConstMetric(c.viewers, gauge, float64(r.Viewers), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(c.running, gauge, boolFloat(r.Running), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(c.cpu, gauge, r.CPUCores, k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(c.moves, counter, float64(s.SwitchesUp), "up")
	ch <- prometheus.MustNewConstMetric(c.moves, counter, float64(s.SwitchesDown), "down")
}
