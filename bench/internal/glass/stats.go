package glass

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Quantile returns the q-quantile (0..1) of samples by the nearest-rank
// method; samples need not be sorted. Zero for no samples.
func Quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Buckets is a Prometheus histogram read from a scrape: cumulative counts
// by upper bound (seconds), +Inf included.
type Buckets map[float64]float64

// ParseBuckets reads the _bucket series of the unlabelled histogram name
// from Prometheus text exposition.
func ParseBuckets(r io.Reader, name string) (Buckets, error) {
	prefix := name + `_bucket{le="`
	out := Buckets{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("unexpected line %q", line)
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return nil, fmt.Errorf("bound in %q: %w", line, err)
		}
		n, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("count in %q: %w", line, err)
		}
		out[bound] = n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s_bucket series", name)
	}
	return out, nil
}

// Sub returns the observations made between an earlier scrape and b.
func (b Buckets) Sub(earlier Buckets) Buckets {
	out := make(Buckets, len(b))
	for le, n := range b {
		out[le] = n - earlier[le]
	}
	return out
}

// Count is the number of observations.
func (b Buckets) Count() float64 { return b[math.Inf(1)] }

// Quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linear within the bucket that holds it. An estimate above the last
// finite bound is reported as that bound.
func (b Buckets) Quantile(q float64) time.Duration {
	bounds := make([]float64, 0, len(b))
	for le := range b {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	total := b.Count()
	if total <= 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		n := b[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return time.Duration(lower * float64(time.Second))
			}
			frac := 0.0
			if n > below {
				frac = (rank - below) / (n - below)
			}
			return time.Duration((lower + (le-lower)*frac) * float64(time.Second))
		}
		lower, below = le, n
	}
	return time.Duration(lower * float64(time.Second))
}
