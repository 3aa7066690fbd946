package ladder

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrapeRealExposition scrapes what client_golang really serves, as
// srtwhep's /metrics does, including label values that hold spaces and
// braces and a metric whose name extends a wanted one.
func TestScrapeRealExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	drops := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricFramesDropped, Help: "Frames dropped."}, []string{"path"})
	rtt := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricSRTRTT, Help: "SRT RTT."}, []string{"path", "remote"})
	decoy := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricFramesDropped + "_extra", Help: "Not it."})
	reg.MustRegister(drops, rtt, decoy)
	drops.WithLabelValues("live/a").Add(3)
	drops.WithLabelValues("live/b c}").Add(4)
	rtt.WithLabelValues("live/a", "127.0.0.1:5000").Set(0.004)
	rtt.WithLabelValues("live/b", "127.0.0.1:5001").Set(0.5)
	decoy.Set(100)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	c := &http.Client{}
	defer c.CloseIdleConnections()

	got, err := Scrape(context.Background(), c, srv.URL, MetricFramesDropped, MetricSRTRTT, "missing_metric")
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
}

func TestScrapeRejectsBadInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("srtwhep_srt_rtt_seconds{a=\"b\"} x\n"))
	}))
	defer srv.Close()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	if _, err := Scrape(context.Background(), c, srv.URL, MetricSRTRTT); err == nil {
		t.Error("a bad value parsed")
	}
	if _, err := Scrape(context.Background(), c, srv.URL+"/gone", MetricSRTRTT); err == nil {
		t.Error("a 404 scraped")
	}
}

// TestScrapeByReason reads one reason of a counter apart, as the ladder
// reads frames dropped for congestion out of all dropped frames.
func TestScrapeByReason(t *testing.T) {
	reg := prometheus.NewRegistry()
	drops := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricFramesDropped, Help: "Frames dropped."}, []string{"path", "reason"})
	reg.MustRegister(drops)
	drops.WithLabelValues("live/a", "congested").Add(2)
	drops.WithLabelValues("live/b", "congested").Add(3)
	drops.WithLabelValues("live/a", "slow_reader").Add(7)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	got, err := Scrape(context.Background(), c, srv.URL, MetricFramesDropped)
	if err != nil {
		t.Fatal(err)
	}
	d := got[MetricFramesDropped]
	if d.Sum != 12 || d.Label("reason", "congested") != 5 || d.Label("reason", "slow_reader") != 7 || d.Label("reason", "bframes") != 0 {
		t.Errorf("drops %+v: want sum 12, congested 5, slow_reader 7, bframes 0", d)
	}
}
