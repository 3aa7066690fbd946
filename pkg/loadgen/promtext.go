package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Metric names the ladder reads from srtwhep; other servers lack them and
// the ladder shows "n/a".
const (
	MetricFramesDropped = "srtwhep_path_frames_dropped_total"
	MetricSRTRTT        = "srtwhep_srt_rtt_seconds"
)

// Sample aggregates the series of one metric: their sum and maximum.
type Sample struct {
	Sum, Max float64
	Found    bool
}

// ParsePromText reads the Prometheus text format and aggregates the series
// of the named metrics. Only plain "name{labels} value [ts]" lines are
// understood, which is all counters and gauges need.
func ParsePromText(r io.Reader, names ...string) (map[string]Sample, error) {
	out := make(map[string]Sample, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		for _, n := range names {
			rest, ok := strings.CutPrefix(line, n)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			if rest[0] == '{' {
				// Label values may hold spaces, so the value starts after the '}'.
				end := strings.LastIndexByte(rest, '}')
				if end < 0 {
					return nil, fmt.Errorf("loadgen: metrics line without '}': %q", line)
				}
				rest = rest[end+1:]
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				return nil, fmt.Errorf("loadgen: metrics line without a value: %q", line)
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return nil, fmt.Errorf("loadgen: metrics value %q: %w", f[0], err)
			}
			s := out[n]
			if !s.Found || v > s.Max {
				s.Max = v
			}
			if !math.IsNaN(v) {
				s.Sum += v
			}
			s.Found = true
			out[n] = s
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loadgen: read metrics: %w", err)
	}
	return out, nil
}

// Scrape fetches url and aggregates the named metrics.
func Scrape(ctx context.Context, c *http.Client, url string, names ...string) (map[string]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("loadgen: metrics URL %q: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadgen: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadgen: scrape %s: %s", url, resp.Status)
	}
	return ParsePromText(io.LimitReader(resp.Body, 16<<20), names...)
}
