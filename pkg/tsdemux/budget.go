package tsdemux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// DefaultTablesBudget is the default server-wide cap on the bytes that
// publishers may have buffered while they look for their program tables:
// an encoder sends its PAT and PMT within the first few kilobytes, so the
// budget is spent only by connections that send something else, and 32
// of them at the per-connection limit fit.
const DefaultTablesBudget = 32 * initPMTLimit

// ErrTablesBudget ends a connection that would take the server past its
// budget for bytes buffered before the program tables.
var ErrTablesBudget = errors.New("too many publishers are sending data without MPEG-TS program tables (PAT and PMT) at once; the server refuses more until they are found or closed")

// Budget is a byte budget shared by the demuxers of one server until
// each has read its program tables: mediacommon keeps every byte read
// before the PMT, to read it again once the tracks are known, so what one
// connection may hold (initPMTLimit) is bounded, and this bounds the sum.
// A nil *Budget is unlimited.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes (DefaultTablesBudget if limit
// is not positive).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultTablesBudget
	}
	return &Budget{limit: limit}
}

// take reserves n bytes; false (and nothing reserved) when that would
// exceed the budget.
func (b *Budget) take(n int64) bool {
	if b == nil {
		return true
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken earlier.
func (b *Budget) give(n int64) {
	if b != nil && n != 0 {
		b.used.Add(-n)
	}
}

// Used is the number of bytes reserved now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

func tablesBudgetError(b *Budget) error {
	return fmt.Errorf("%w (%d bytes, server-wide)", ErrTablesBudget, b.limit)
}

// initError says why the search for the program tables ended without them.
func (d *Demuxer) initError(ctx context.Context, err error, mr *meteredReader) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errInitLimit):
		return fmt.Errorf("none in the first %d bytes: %w", mr.read, ErrNoPMT)
	case errors.Is(err, errBudget):
		return tablesBudgetError(d.budget)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("stream ended after %d bytes: %w", mr.read, ErrNoPMT)
	case mr.err != nil:
		return mr.err // the reader failed: report it unchanged
	}
	return fmt.Errorf("reading MPEG-TS program tables: %w", err)
}

var (
	errInitLimit = errors.New("PMT search limit reached")
	errBudget    = errors.New("PMT search budget spent")
)

// meteredReader counts bytes, bounds the PMT search and observes ctx between
// reads (a blocked Read is the caller's to unblock by closing the source).
type meteredReader struct {
	ctx   context.Context
	r     io.Reader
	bytes *atomic.Uint64
	limit int64 // <0: unlimited
	read  int64
	err   error // last non-EOF error of r
	// budget is charged for every byte read while limit holds, and
	// given back by endInit.
	budget *Budget
}

// endInit ends the PMT search: the bytes it held are handed on (or
// dropped), so the budget gets them back and the limit is lifted.
func (m *meteredReader) endInit() {
	if m.limit >= 0 {
		m.budget.give(m.read)
	}
	m.limit = -1
}

func (m *meteredReader) Read(p []byte) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	if m.limit >= 0 && m.read >= m.limit {
		return 0, errInitLimit
	}
	if m.limit >= 0 && !m.budget.take(int64(len(p))) {
		return 0, errBudget
	}
	n, err := m.r.Read(p)
	if m.limit >= 0 {
		m.budget.give(int64(len(p) - n)) // reserved the buffer, used n
	}
	m.read += int64(n)
	m.bytes.Add(uint64(n))
	if err != nil && !errors.Is(err, io.EOF) {
		m.err = err
	}
	return n, err
}
