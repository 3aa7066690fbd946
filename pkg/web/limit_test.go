package web

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// A flood of refused connections makes one log line per client per
// interval, and the table forgets a client once its connections close.
func TestLimitTableAndLog(t *testing.T) {
	var buf bytes.Buffer
	l := newLimitListener(nil, 2, 4, func(netip.Addr) bool { return false }, slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1000, 0)
	l.table.Now = func() time.Time { return now }
	a := netip.MustParseAddr("2001:db8:1:2::1")
	b := netip.MustParseAddr("2001:db8:1:2::ffff") // same /64
	ka := auth.Key(a)
	if !l.admit(ka, a) || !l.admit(auth.Key(b), b) {
		t.Fatal("within the cap")
	}
	for range 1000 {
		if l.admit(ka, a) {
			t.Fatal("over the per-client cap, same /64")
		}
	}
	if n := strings.Count(buf.String(), "too many HTTP connections"); n != 1 {
		t.Errorf("%d log lines for 1000 refusals in one interval, want 1:\n%s", n, buf.String())
	}
	now = now.Add(refusalLogEvery)
	l.admit(ka, a)
	if got := buf.String(); strings.Count(got, "too many HTTP connections") != 2 || !strings.Contains(got, "refused=1000") {
		t.Errorf("the next interval's line must carry the count:\n%s", got)
	}
	c := netip.MustParseAddr("198.51.100.1")
	for range 2 {
		if !l.admit(auth.Key(c), c) {
			t.Fatal("another client within the total")
		}
	}
	d := netip.MustParseAddr("198.51.100.2")
	if l.admit(auth.Key(d), d) {
		t.Fatal("over the total cap")
	}
	if !strings.Contains(buf.String(), "HTTP connection limit reached") {
		t.Errorf("no line for the total cap:\n%s", buf.String())
	}
	for range 2 {
		l.release(ka)
	}
	for range 2 {
		l.release(auth.Key(c))
	}
	if l.openConns() != 0 || l.table.Clients() != 0 {
		t.Errorf("after every close: %d open, %d clients remembered", l.openConns(), l.table.Clients())
	}
}
