package plane

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// TestTCPLimitCaps pushes past both caps: a client's connections past
// its cap and anyone's past the total are refused and counted, one log
// line covers a burst of refusals, IPv6 clients count by /64, and a
// released slot takes the next connection.
func TestTCPLimitCaps(t *testing.T) {
	var logs bytes.Buffer
	l := NewTCPLimit(2, 5, slog.New(slog.NewTextHandler(&logs, nil)))
	a := netip.MustParseAddr("192.0.2.1")
	var releases []func()
	admit := func(addr netip.Addr) bool {
		r, ok := l.Admit(addr)
		if ok {
			releases = append(releases, r)
		}
		return ok
	}
	for i := range 12 {
		if ok := admit(a); ok != (i < 2) {
			t.Fatalf("connection %d of one client admitted: %v, want %v", i+1, ok, i < 2)
		}
	}
	if pc, tot := l.Refused(); pc != 10 || tot != 0 {
		t.Errorf("refused %d per client, %d in total; want 10, 0", pc, tot)
	}
	if n := strings.Count(logs.String(), "too many from this client"); n != 1 {
		t.Errorf("%d log lines for a burst of 10 refusals, want 1:\n%s", n, &logs)
	}
	// Two addresses of one /64 are one client; another /64 is another.
	if !admit(netip.MustParseAddr("2001:db8::1")) || !admit(netip.MustParseAddr("2001:db8::2")) {
		t.Fatal("a /64's first two connections refused")
	}
	if admit(netip.MustParseAddr("2001:db8::3")) {
		t.Error("a third connection from the same /64 admitted")
	}
	if !admit(netip.MustParseAddr("2001:db8:1::1")) {
		t.Fatal("another /64 refused")
	}
	// Five open: the total refuses a fresh client.
	if admit(netip.MustParseAddr("192.0.2.9")) {
		t.Error("a connection past the total admitted")
	}
	if _, tot := l.Refused(); tot != 1 {
		t.Errorf("refused %d over the total, want 1", tot)
	}
	releases[0]()
	releases[0]() // once only
	if l.Open() != 4 {
		t.Errorf("%d open after one release (called twice), want 4", l.Open())
	}
	if !admit(a) {
		t.Error("the freed slot refused its client's next connection")
	}
	for _, r := range releases {
		r()
	}
	if l.Open() != 0 || l.table.Clients() != 0 {
		t.Errorf("after every release: %d open, %d clients remembered", l.Open(), l.table.Clients())
	}
}
