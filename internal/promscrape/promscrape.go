// Package promscrape reads a Prometheus /metrics page as a Prometheus
// server would: one GET asking for the text format, parsed with
// Prometheus' own parser, so whatever it would refuse is an error here.
// The capacity ladder (internal/ladder) and the tests (internal/testkit)
// both scrape through it.
package promscrape

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxBody bounds what one scrape reads: a server's page is some tens of
// KiB, and a broken one must not fill memory.
const maxBody = 16 << 20

// Families fetches url with c and returns its metric families by name.
func Families(ctx context.Context, c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics URL %q: %w", url, err)
	}
	// Asked for plainly, a server may answer in OpenMetrics or protobuf;
	// the text format is the one every exporter speaks.
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("scrape %s: %s %s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return fams, nil
}
