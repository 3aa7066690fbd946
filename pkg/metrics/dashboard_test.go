package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const dashboardFile = "../../deploy/grafana-dashboard.json"

// metricName matches the metric names a PromQL expression can use from this
// process: ours and the process/Go collectors'.
var metricName = regexp.MustCompile(`\b(?:srtwhep|process|go)_[a-zA-Z0-9_]+`)

// TestDashboard keeps deploy/grafana-dashboard.json importable and in step
// with the names defined here: a renamed metric breaks this test instead of
// silently blanking a panel.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatalf("read the dashboard: %v", err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}

	if !declaresPrometheusInput(dash) {
		t.Errorf(`%s: __inputs must declare DS_PROMETHEUS with pluginId "prometheus" so Grafana asks for a datasource on import`, dashboardFile)
	}

	var exprs []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ds, ok := v["datasource"].(map[string]any); ok && ds["type"] == "prometheus" && ds["uid"] != "${DS_PROMETHEUS}" {
				t.Errorf("a prometheus datasource uses uid %v, want ${DS_PROMETHEUS}", ds["uid"])
			}
			for k, c := range v {
				walk(k, c)
			}
		case []any:
			for _, c := range v {
				walk(key, c)
			}
		case string:
			// Panel queries are "expr"; variable queries are "definition"
			// and "query".
			if key == "expr" || key == "definition" || key == "query" {
				exprs = append(exprs, v)
			}
		}
	}
	walk("", dash)
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no queries")
	}

	ours := make(map[string]bool, len(defs))
	for _, d := range defs {
		ours[d.name] = true
	}
	gathered := gatheredNames(t, New(fixedSources()))
	used := make(map[string]bool)
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			name = histogramFamily(name, ours)
			used[name] = true
			if strings.HasPrefix(name, "srtwhep_") && !ours[name] {
				t.Errorf("query %q uses %s, which pkg/metrics does not define", e, name)
			}
			if !gathered[name] {
				t.Errorf("query %q uses %s, which the registry does not export", e, name)
			}
		}
	}

	// The panels the deploy docs promise.
	for _, name := range []string{
		"srtwhep_path_readers", "srtwhep_path_ingest_bytes_total", "srtwhep_path_sent_bytes_total",
		"srtwhep_path_frames_dropped_total", "srtwhep_srt_rtt_seconds", "srtwhep_srt_packets_lost_total",
		"srtwhep_webrtc_sessions", "srtwhep_webrtc_handshakes_in_flight",
		"process_cpu_seconds_total", "process_resident_memory_bytes",
		"srtwhep_srt_recommended_latency_seconds", "srtwhep_server_latency_seconds",
		"srtwhep_webrtc_udp_datagrams_refused_total", "srtwhep_webrtc_udp_receive_drops_total",
		"srtwhep_path_audio_frames_out_total", "srtwhep_path_audio_transcode_cpu_seconds_total",
	} {
		if !used[name] {
			t.Errorf("the dashboard has no panel using %s", name)
		}
	}
}

// histogramFamily maps a histogram's series name (NAME_bucket, _sum,
// _count), which a query must use, to the family name pkg/metrics defines.
func histogramFamily(name string, ours map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && ours[base] {
			return base
		}
	}
	return name
}

func declaresPrometheusInput(dash map[string]any) bool {
	inputs, _ := dash["__inputs"].([]any)
	for _, in := range inputs {
		m, _ := in.(map[string]any)
		if m["name"] == "DS_PROMETHEUS" && m["pluginId"] == "prometheus" {
			return true
		}
	}
	return false
}
