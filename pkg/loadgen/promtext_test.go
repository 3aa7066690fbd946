package loadgen

import (
	"strings"
	"testing"
)

func TestParsePromText(t *testing.T) {
	text := `# HELP srtwhep_path_frames_dropped_total Frames dropped.
# TYPE srtwhep_path_frames_dropped_total counter
srtwhep_path_frames_dropped_total{path="live/a"} 3
srtwhep_path_frames_dropped_total{path="live/b c}"} 4
srtwhep_path_frames_dropped_total_extra 100
srtwhep_srt_rtt_seconds{path="live/a",remote="127.0.0.1:5000"} 0.004 1700000000000
srtwhep_srt_rtt_seconds{path="live/b"} 0.5
other_metric 7
`
	got, err := ParsePromText(strings.NewReader(text), MetricFramesDropped, MetricSRTRTT, "missing_metric")
	if err != nil {
		t.Fatal(err)
	}
	if d := got[MetricFramesDropped]; !d.Found || d.Sum != 7 || d.Max != 4 {
		t.Errorf("drops = %+v, want sum 7 max 4", d)
	}
	if r := got[MetricSRTRTT]; !r.Found || r.Max != 0.5 {
		t.Errorf("rtt = %+v, want max 0.5", r)
	}
	if got["missing_metric"].Found {
		t.Error("a metric that is not there was found")
	}
	if _, err := ParsePromText(strings.NewReader("srtwhep_srt_rtt_seconds{a=\"b\"} x\n"), MetricSRTRTT); err == nil {
		t.Error("a bad value parsed")
	}
}
