package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/glass"
)

// serverLatencyMetric is the server's own share, as pkg/metrics exports it.
const serverLatencyMetric = "srtwhep_server_latency_seconds"

// cmdG2G measures glass-to-glass latency with a generated clip whose
// frames carry their creation time in their pixels (see package glass),
// and with -metrics the server's own share from its histogram over the
// same run.
func cmdG2G(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen g2g", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg glass.Config
	var metricsURL string
	fs.StringVar(&cfg.SRTURL, "srt", "", "SRT URL to publish the clip to, e.g. 'srt://127.0.0.1:8890?streamid=publish:live/g2g&pkt_size=1316' (required)")
	fs.StringVar(&cfg.WHEPURL, "url", "", "WHEP endpoint of the same path, e.g. http://127.0.0.1:8889/live/g2g/whep (required)")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long to measure after the warm-up")
	fs.DurationVar(&cfg.Warmup, "warmup", 3*time.Second, "frames made in this time after the viewer connects are not counted (its first GOP comes from the cache)")
	fs.StringVar(&cfg.Bitrate, "bitrate", "1500k", "encoder bitrate of the 640x360@30 clip")
	fs.StringVar(&cfg.Codec, "codec", "h264", "what the generator publishes: h264 (libx264) or h265 (libx265)")
	fs.BoolVar(&cfg.ViewerH265, "viewer-h265", false, "the viewer offers H.265 too (an H.265 path then passes through to it; without, it gets the path's H.264 rendition)")
	fs.StringVar(&metricsURL, "metrics", "", "the server's /metrics URL, to report its own share ("+serverLatencyMetric+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.SRTURL == "" || cfg.WHEPURL == "" {
		fmt.Fprintln(stderr, "whep-loadgen g2g: -srt and -url are required")
		return 2
	}
	if cfg.Codec != "h264" && cfg.Codec != "h265" {
		fmt.Fprintf(stderr, "whep-loadgen g2g: -codec %q: want h264 or h265\n", cfg.Codec)
		return 2
	}
	var before glass.Buckets
	if metricsURL != "" {
		var err error
		if before, err = scrapeBuckets(ctx, metricsURL); err != nil {
			fmt.Fprintf(stderr, "whep-loadgen g2g: %v\n", err)
			return 1
		}
	}
	res, err := glass.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen g2g: %v (generated %d, decoded %d, unreadable %d, out of step %d)\n",
			err, res.Generated, res.Decoded, res.Unreadable, res.OutOfStep)
		return 1
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(stdout, "glass-to-glass (%s published, %s received; frame created -> its last RTP packet at a pion viewer, loopback): median %s, p95 %s, min %s, max %s over %d frames\n",
		cfg.Codec, res.Codec, ms(res.Median), ms(res.P95), ms(res.Min), ms(res.Max), len(res.Samples))
	fmt.Fprintf(stdout, "  frames generated %d, decoded %d, stamp unreadable %d, out of step %d, pictures lost on the way %d\n",
		res.Generated, res.Decoded, res.Unreadable, res.OutOfStep, res.LostPictures)
	if metricsURL != "" {
		after, err := scrapeBuckets(ctx, metricsURL)
		if err != nil {
			fmt.Fprintf(stderr, "whep-loadgen g2g: %v\n", err)
			return 1
		}
		d := after.Sub(before)
		fmt.Fprintf(stdout, "  server's own share (%s, SRT delivery -> RTP send, every viewer of the server): median %s, p95 %s over %.0f frames\n",
			serverLatencyMetric, ms(d.Quantile(0.5)), ms(d.Quantile(0.95)), d.Count())
	}
	return 0
}

func scrapeBuckets(ctx context.Context, url string) (glass.Buckets, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	b, err := glass.ParseBuckets(bytes.NewReader(body), serverLatencyMetric)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return b, nil
}
