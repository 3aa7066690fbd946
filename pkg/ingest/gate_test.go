package ingest

import (
	"log/slog"
	"strings"
	"testing"
)

// TestGateBounded: a gate that is never released (a stream whose video
// never proves playable) opens by itself at maxGated, in order, rather
// than holding media without end.
func TestGateBounded(t *testing.T) {
	g := &gate{}
	var ran []int
	for i := range maxGated + 10 {
		if !g.hold(func() { ran = append(ran, i) }) {
			ran = append(ran, i)
		}
	}
	if len(ran) != maxGated+10 || len(g.held) != 0 {
		t.Fatalf("ran %d, held %d; want all %d run once the bound was hit", len(ran), len(g.held), maxGated+10)
	}
	for i, v := range ran {
		if v != i {
			t.Fatalf("ran out of order at %d: %v", i, ran[:i+1])
		}
	}
	var nilGate *gate
	if nilGate.hold(func() {}) {
		t.Error("a nil gate held")
	}
}

// TestHeldLogBounded: a publisher's held lines stop at maxHeld, and
// release(true) writes what was kept, in order, then passes the rest.
func TestHeldLogBounded(t *testing.T) {
	var buf strings.Builder
	base := slog.New(slog.NewTextHandler(&buf, nil))
	l := &heldLog{}
	log := l.logger(base).With("path", "live/x")
	for range maxHeld + 20 {
		log.Info("held")
	}
	if buf.Len() != 0 || len(l.held) != maxHeld {
		t.Fatalf("wrote %q, held %d; want nothing written and %d held", buf.String(), len(l.held), maxHeld)
	}
	l.release(true)
	log.Info("after")
	l.release(false) // only the first decision counts
	log.Info("after again")
	if n := strings.Count(buf.String(), "msg=held path=live/x"); n != maxHeld {
		t.Errorf("%d held lines written, want %d", n, maxHeld)
	}
	if !strings.Contains(buf.String(), "msg=after") || !strings.Contains(buf.String(), "after again") {
		t.Errorf("lines after the release were not written: %s", buf.String())
	}
	dropped := &heldLog{}
	dlog := dropped.logger(base)
	dlog.Info("gone")
	dropped.release(false)
	dlog.Info("gone too")
	if strings.Contains(buf.String(), "gone") {
		t.Errorf("a dropped publisher's lines were written")
	}
}
