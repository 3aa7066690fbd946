package tsdemux

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
)

// manyPIDs is valid-looking TS on n PIDs other than the stream's, each
// with per packets that never start a unit, counters continuous: what the
// TS reader would assemble on every PID up to the unit cap. It samples
// the live heap like endlessPES.
type manyPIDs struct {
	n, per      int
	i           int // packets sent
	sampleEvery int
	peak        uint64
	pkt         [tsPacketSize]byte
}

func (m *manyPIDs) Read(p []byte) (int, error) {
	total := m.n * m.per
	if m.i >= total {
		return 0, io.EOF
	}
	n := 0
	for len(p)-n >= tsPacketSize && m.i < total {
		pid := uint16(0x200 + m.i%m.n) // past the builder's PIDs
		cc := uint8(m.i / m.n)
		m.pkt[0] = tsSync
		m.pkt[1] = byte(pid >> 8 & 0x1f)
		m.pkt[2] = byte(pid)
		m.pkt[3] = 0x10 | cc&0x0f
		for j := 4; j < tsPacketSize; j++ {
			m.pkt[j] = 0x55
		}
		n += copy(p[n:], m.pkt[:])
		m.i++
		if m.i%m.sampleEvery == 0 {
			m.peak = max(m.peak, liveHeap())
		}
	}
	return n, nil
}

// TestPIDsAfterTablesIgnored: after valid tables, 20 MB spread over 4,000
// PIDs the program does not declare. On main the TS library assembled
// every one of them (up to maxUnitBytes each: 8,191 × 4 MiB in the worst
// case); now only the tracks read are followed, so the heap does not
// grow with them, and the stream goes on.
func TestPIDsAfterTablesIgnored(t *testing.T) {
	b := newTSBuilder(t, false)
	pts := b.gop(90000, 5, true)
	head := bytes.Clone(b.bytes())
	b.buf.Reset()
	b.gop(pts, 5, true)
	tail := bytes.Clone(b.bytes())
	junk := &manyPIDs{n: 4000, per: 28, sampleEvery: 20000}
	before := liveHeap()
	res := demux(t, io.MultiReader(bytes.NewReader(head), junk, bytes.NewReader(tail)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	growth := int64(junk.peak) - int64(before)
	t.Logf("%.1f MB on %d undeclared PIDs after the tables: live heap grew by %.1f MB at its peak",
		float64(junk.n*junk.per*tsPacketSize)/1e6, junk.n, float64(growth)/1e6)
	if growth > 2<<20 {
		t.Errorf("live heap grew by %d bytes, want under 2 MiB: the undeclared PIDs were assembled", growth)
	}
	if len(res.aus) != 10 {
		t.Errorf("%d access units, want the two GOPs' 10", len(res.aus))
	}
}

// TestNullPacketsNotRecorded: padding before the tables (a muxer's
// constant-bitrate stuffing, or a squatter's) reaches neither the TS
// library nor its pre-PMT recording, but counts against the PMT search.
func TestNullPacketsNotRecorded(t *testing.T) {
	null := make([]byte, tsPacketSize)
	null[0], null[1], null[2], null[3] = tsSync, 0x1f, 0xff, 0x10
	pad := bytes.Repeat(null, (512<<10)/tsPacketSize)
	b := newTSBuilder(t, false)
	b.gop(90000, 5, true)
	res := demux(t, io.MultiReader(bytes.NewReader(pad), bytes.NewReader(b.bytes())))
	if res.err != nil || len(res.aus) != 5 {
		t.Fatalf("512 KiB of null packets, then a GOP: %v, %d access units; want the GOP", res.err, len(res.aus))
	}
	res = demux(t, bytes.NewReader(bytes.Repeat(pad, 3)))
	if !errors.Is(res.err, ErrNoPMT) {
		t.Fatalf("1.5 MiB of null packets: %v, want ErrNoPMT", res.err)
	}
}

// TestTablesBudget: connections that send no tables share one budget; the
// one that would pass it is refused with ErrTablesBudget, and what a
// connection took is given back when it ends, found its tables or not.
func TestTablesBudget(t *testing.T) {
	budget := NewBudget(3 << 20 / 2) // one and a half connections' limit
	junk := bytes.Repeat([]byte{0x00, 0x11, 0x22}, 1<<20)
	// A reader that stops before the limit and waits holds its bytes.
	hold := make(chan struct{})
	first := io.MultiReader(bytes.NewReader(junk[:900<<10]), blockingReader{hold})
	done := make(chan error, 1)
	go func() {
		d := New(first, Config{TablesBudget: budget})
		done <- d.Run(context.Background(), func(*av.AccessUnit) error { return nil })
	}()
	waitBudget(t, budget, 900<<10)

	d := New(bytes.NewReader(junk), Config{TablesBudget: budget})
	err := d.Run(context.Background(), func(*av.AccessUnit) error { return nil })
	if !errors.Is(err, ErrTablesBudget) {
		t.Fatalf("second connection: %v, want ErrTablesBudget", err)
	}
	close(hold)
	if err := <-done; !errors.Is(err, ErrNoPMT) {
		t.Fatalf("first connection: %v, want ErrNoPMT at its end", err)
	}
	if n := budget.Used(); n != 0 {
		t.Fatalf("%d bytes still reserved after both ended", n)
	}
	// A stream that finds its tables gives its bytes back at once.
	b := newTSBuilder(t, false)
	b.gop(90000, 5, true)
	res := demux(t, bytes.NewReader(b.bytes()), func(d *Demuxer) { d.budget = budget })
	if res.err != nil || len(res.aus) != 5 || budget.Used() != 0 {
		t.Fatalf("a real stream: %v, %d access units, %d bytes reserved after", res.err, len(res.aus), budget.Used())
	}
}

// blockingReader blocks until its channel closes, then ends.
type blockingReader struct{ c chan struct{} }

func (r blockingReader) Read([]byte) (int, error) { <-r.c; return 0, io.EOF }

// waitBudget waits until budget holds at least n bytes.
func waitBudget(t *testing.T, budget *Budget, n int64) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the first connection's bytes reserved", func() bool { return budget.Used() >= n })
}
