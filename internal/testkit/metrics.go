package testkit

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/srtwhep/srtwhep/internal/promscrape"
)

// Scrape reads the server's /metrics at addr (host:port) as a Prometheus
// server would (promscrape), and fails the test on anything Prometheus
// would refuse.
func Scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	// No keep-alive: a test that counts the server's connections must
	// not see the scraper's.
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	families, err := promscrape.Families(context.Background(), client, "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// Series returns the value of the first sample of family name whose
// labels include every pair of labels (name, value, name, value, ...).
func Series(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && LabelOf(m, labels[i]) == labels[i+1]
		}
		if match {
			return sampleValue(m), true
		}
	}
	return 0, false
}

// Metric scrapes addr once and returns Series(name, labels...).
func Metric(t testing.TB, addr, name string, labels ...string) (float64, bool) {
	t.Helper()
	return Series(Scrape(t, addr), name, labels...)
}

// MustMetric is Metric for a series the server always exports: its
// absence fails the test rather than reading as 0.
func MustMetric(t testing.TB, addr, name string, labels ...string) float64 {
	t.Helper()
	v, ok := Metric(t, addr, name, labels...)
	if !ok {
		t.Fatalf("no %s%q in /metrics", name, labels)
	}
	return v
}

// LabelOf is m's value of label name, "" when it has none.
func LabelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sampleValue is the value of a counter, gauge or untyped sample.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
