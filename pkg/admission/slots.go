package admission

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/connlimit"
)

// Slots counts slots in total and per client, so that neither one client
// nor everyone together can hold more than their share: the WHEP server
// keeps one for the offers answered and waiting for ICE (pending) and one
// for those whose ICE has started (the DTLS work). It is the connection
// table of the HTTP and ICE-TCP listeners (pkg/connlimit), whose
// per-client entries live only while that client holds a slot, so it
// never holds more entries than the total cap; its refusal summaries go
// unused (a refused offer is logged with the WHEP refusals).
type Slots struct {
	perClient int
	table     *connlimit.Table
}

// NewSlots allows total slots, at most perClient of them per client.
func NewSlots(total, perClient int) *Slots {
	return &Slots{perClient: perClient, table: connlimit.New(perClient, total, time.Second)}
}

// SlotRefusal says which cap refused a slot.
type SlotRefusal int

const (
	SlotTaken SlotRefusal = iota
	SlotsFull
	ClientSlotsFull
)

// Acquire takes a slot for client key without waiting.
func (h *Slots) Acquire(key string) SlotRefusal {
	ok, r := h.table.Admit(key)
	switch {
	case ok:
		return SlotTaken
	case r.OverTotal:
		return SlotsFull
	}
	return ClientSlotsFull
}

// Release gives back a slot Acquire granted to key; on nil (no slot
// held) it does nothing.
func (h *Slots) Release(key string) {
	if h == nil {
		return
	}
	h.table.Release(key)
}

// InFlight is how many slots are taken.
func (h *Slots) InFlight() int { return h.table.Open() }

// PerClient is the per-client cap.
func (h *Slots) PerClient() int { return h.perClient }

// clients is the size of the per-client table (for tests).
func (h *Slots) clients() int { return h.table.Clients() }
