package tsdemux

import (
	"errors"
	"fmt"
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
