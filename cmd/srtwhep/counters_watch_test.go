package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// counterWatch scrapes the server's /metrics and keeps, for every srtwhep_*
// counter, the highest value any scrape showed. A counter is its family and
// its labels other than path: each reason is an event of its own.
type counterWatch struct {
	addr string
	max  map[string]float64
}

func (w *counterWatch) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams := testkit.Scrape(t, w.addr)
	for name, f := range fams {
		if !strings.HasPrefix(name, "srtwhep_") || f.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range f.GetMetric() {
			k := counterKey(name, m, "path")
			w.max[k] = max(w.max[k], m.GetCounter().GetValue())
		}
	}
	return fams
}

// waitAbove scrapes until the sample of name with labels (pairs of name
// and value) is above 0.
func (w *counterWatch) waitAbove(t *testing.T, name string, labels ...string) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("%s%q above 0", name, labels), func() bool {
		v, _ := testkit.Series(w.scrape(t), name, labels...)
		return v > 0
	})
}

// pathCounters returns path's srtwhep_path_* counter samples by key.
func (w *counterWatch) pathCounters(fams map[string]*dto.MetricFamily, path string) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "srtwhep_path_") || f.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range f.GetMetric() {
			if testkit.LabelOf(m, "path") == path {
				out[counterKey(name, m)] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func (w *counterWatch) wantPublisherUp(t *testing.T, fams map[string]*dto.MetricFamily, path string, want float64) {
	t.Helper()
	if v, ok := testkit.Series(fams, "srtwhep_path_publisher_up", "path", path); !ok || v != want {
		t.Errorf("srtwhep_path_publisher_up{path=%q} = %v (exported: %v), want %v", path, v, ok, want)
	}
}

// checkAllMoved fails for every counter that stayed 0 and is not listed
// in notProducible, and for every listed one the server no longer exports.
func (w *counterWatch) checkAllMoved(t *testing.T) {
	t.Helper()
	var moved, still []string
	families := map[string]bool{}
	for k, v := range w.max {
		family, _, _ := strings.Cut(k, "{")
		families[family] = true
		switch {
		case v > 0:
			moved = append(moved, k)
		case notProducible[family] == "":
			still = append(still, k)
		}
	}
	sort.Strings(moved)
	sort.Strings(still)
	t.Logf("counters that moved (%d): %s", len(moved), strings.Join(moved, ", "))
	for _, k := range still {
		t.Errorf("counter %s stayed 0 although the test produced its event", k)
	}
	for family := range notProducible {
		if !families[family] {
			t.Errorf("notProducible lists %s, which the server does not export: remove it", family)
		}
	}
	if len(moved) == 0 {
		t.Error("no srtwhep_* counter found in any scrape")
	}
}

// counterKey writes a sample as family{label="value",...}, leaving out
// the labels named in skip.
func counterKey(family string, m *dto.Metric, skip ...string) string {
	var labels []string
	for _, l := range m.GetLabel() {
		if !slices.Contains(skip, l.GetName()) {
			labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
	}
	if len(labels) == 0 {
		return family
	}
	sort.Strings(labels)
	return family + "{" + strings.Join(labels, ",") + "}"
}

// dialOne dials a viewer when the server's only pending and handshake
// slots are free, and returns once the server has it too: a slot is taken
// from the offer until the server sees the connection.
func (ts *testServer) dialOne(t *testing.T, path string) *viewer {
	t.Helper()
	free := ts.slotsFree
	testkit.WaitFor(t, 15*time.Second, "a free handshake slot", free)
	v := dialViewer(t, ts, path, func(o *whepclient.Options) { o.Audio = true })
	testkit.WaitFor(t, 15*time.Second, "the server to see the viewer connected", free)
	return v
}

// slotsFree reports that no offer is pending and no handshake in flight.
func (ts *testServer) slotsFree() bool {
	st := ts.whep.Stats()
	return st.HandshakesInFlight == 0 && st.PendingOffers == 0
}
