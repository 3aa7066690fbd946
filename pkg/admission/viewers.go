package admission

import (
	"errors"
	"fmt"
	"time"
)

// ViewerLimits bound what WHEP viewers may hold before they watch: the
// offers each client may post, the answered offers waiting for their
// viewer's first ICE check, and the handshakes under way. Zero values
// take the defaults below (WithDefaults).
type ViewerLimits struct {
	// MaxHandshakes bounds the handshakes in flight (the viewer's first
	// ICE check → connected: the DTLS work); a viewer whose ICE starts
	// while every slot is taken is closed. Default DefaultMaxHandshakes.
	MaxHandshakes int
	// MaxHandshakesPerClient bounds them per client address (per /64 for
	// IPv6), so one client cannot take every slot. Default
	// DefaultMaxHandshakesPerClient, at most MaxHandshakes.
	MaxHandshakesPerClient int
	// ICEStartTimeout closes an answered offer whose viewer sent no ICE
	// check within it, freeing its pending slot and its reader. Default
	// DefaultICEStartTimeout, at most the WHEP server's handshake timeout.
	ICEStartTimeout time.Duration
	// OfferRate and OfferBurst are each client's token bucket for POSTs
	// (per /64 for IPv6): OfferRate a second sustained, OfferBurst at
	// once; beyond it a POST gets 429 + Retry-After. Both grow with the
	// client's connected viewers (OfferBuckets). Defaults
	// DefaultOfferRate, DefaultOfferBurst.
	OfferRate, OfferBurst int
	// MaxPendingOffers bounds the answered offers whose viewer has not
	// started ICE yet; beyond it a POST gets 503 + Retry-After. Per
	// client, they and the handshakes in flight together are bounded by
	// MaxHandshakesPerClient. Default DefaultMaxPendingOffers.
	MaxPendingOffers int
}

// Defaults for the zero values of ViewerLimits; the offer bucket's are
// beside it (offers.go).
const (
	DefaultMaxHandshakes = 32
	// Half of the default total: a household or office behind one NAT
	// rarely starts more viewers at the same moment, and what is left is
	// enough for everyone else.
	DefaultMaxHandshakesPerClient = 16
	// A pending offer holds a reader and a connection that waits for a
	// check: memory only. 512 of them leave room for 32 clients each at
	// its per-client cap before a newcomer is refused.
	DefaultMaxPendingOffers = 512
	// DefaultICEStartTimeout is how long an answered offer may go without
	// a single ICE check from its viewer before it is closed. A browser
	// starts its checks within milliseconds of reading the answer (it has
	// all our candidates, we do not trickle), so 2 s covers a slow client
	// and a long round trip; an offer that was posted only to hold a slot
	// is gone by then.
	DefaultICEStartTimeout = 2 * time.Second
)

// WithDefaults is l with every zero or negative limit set to its default
// and the caps made consistent: a client's share at most the total, and
// the ICE start timeout at most handshakeTimeout, the whole time a viewer
// has to connect.
func (l ViewerLimits) WithDefaults(handshakeTimeout time.Duration) ViewerLimits {
	positiveOr(&l.MaxHandshakes, DefaultMaxHandshakes)
	positiveOr(&l.MaxHandshakesPerClient, DefaultMaxHandshakesPerClient)
	l.MaxHandshakesPerClient = min(l.MaxHandshakesPerClient, l.MaxHandshakes)
	positiveOr(&l.ICEStartTimeout, DefaultICEStartTimeout)
	l.ICEStartTimeout = min(l.ICEStartTimeout, handshakeTimeout)
	positiveOr(&l.OfferRate, DefaultOfferRate)
	positiveOr(&l.OfferBurst, DefaultOfferBurst)
	positiveOr(&l.MaxPendingOffers, DefaultMaxPendingOffers)
	return l
}

// Viewers are the tables a WHEP server keeps its ViewerLimits in.
type Viewers struct {
	Limits ViewerLimits
	// Offers is the per-client token bucket every POST passes first.
	Offers *OfferBuckets
	// Pending are the answered offers waiting for their viewer's first
	// ICE check, Handshakes those whose DTLS is under way; each capped in
	// total, handshakes per client too.
	Pending, Handshakes *Slots
	// Unproven caps a client's answered offers not yet connected, pending
	// and handshaking together, at MaxHandshakesPerClient: taken at the
	// POST, so a crowd behind one address is refused at once (503 +
	// Retry-After) rather than answered and closed when its ICE starts
	// with the address's handshake slots taken, which costs a browser its
	// whole connect timeout.
	Unproven *Slots
}

// NewViewers makes the tables for l, whose defaults are filled in
// (WithDefaults).
func NewViewers(l ViewerLimits) *Viewers {
	return &Viewers{
		Limits:     l,
		Offers:     NewOfferBuckets(l.OfferRate, l.OfferBurst, DefaultOfferClients),
		Pending:    NewSlots(l.MaxPendingOffers, l.MaxPendingOffers),
		Handshakes: NewSlots(l.MaxHandshakes, l.MaxHandshakesPerClient),
		Unproven:   NewSlots(l.MaxPendingOffers+l.MaxHandshakes, l.MaxHandshakesPerClient),
	}
}

// positiveOr sets a zero or negative limit to its default d.
func positiveOr[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// TakeOffer holds a place for an answered offer from client key: the
// client's share of its offers not yet connected (pending or in their
// handshake) first, then one of everyone's pending offers. The error says
// which limit refused it, for the 503's detail. The offer gives both back
// with OfferRefused if it is refused later, or as it moves on: Pending
// when ICE starts, Unproven once its viewer is connected or gone.
func (v *Viewers) TakeOffer(key string) error {
	switch v.Unproven.Acquire(key) {
	case SlotsFull:
		return errors.New("too many WebRTC offers waiting for ICE to start or for their handshake; retry in a moment")
	case ClientSlotsFull:
		return fmt.Errorf("too many WebRTC offers from your address waiting for ICE to start or for their handshake (limit %d); start ICE on the ones you have, or retry in a moment", v.Unproven.PerClient())
	}
	if v.Pending.Acquire(key) != SlotTaken {
		v.Unproven.Release(key)
		return fmt.Errorf("too many WebRTC offers waiting for ICE to start (limit %d); retry in a moment", v.Limits.MaxPendingOffers)
	}
	return nil
}

// OfferRefused gives back what TakeOffer took for an offer refused before
// its answer was sent.
func (v *Viewers) OfferRefused(key string) {
	v.Pending.Release(key)
	v.Unproven.Release(key)
}
