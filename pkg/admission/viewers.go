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

// Offer is the place an answered offer holds on its way to a connected
// viewer (TakeOffer): its client's Unproven slot throughout, and a Pending
// slot until its viewer's ICE starts, then a Handshakes slot
// (StartHandshake). Its owner gives it all back with Release, once: when
// the viewer is connected or gone, or the offer is refused.
type Offer struct {
	v    *Viewers
	key  string
	slot *Slots // Pending, then Handshakes; nil when it holds neither
}

// TakeOffer holds a place for an answered offer from client key: the
// client's share of its offers not yet connected (pending or in their
// handshake) first, then one of everyone's pending offers. The error says
// which limit refused it, for the 503's detail.
func (v *Viewers) TakeOffer(key string) (*Offer, error) {
	switch v.Unproven.Acquire(key) {
	case SlotsFull:
		return nil, errors.New("too many WebRTC offers waiting for ICE to start or for their handshake; retry in a moment")
	case ClientSlotsFull:
		return nil, fmt.Errorf("too many WebRTC offers from your address waiting for ICE to start or for their handshake (limit %d); start ICE on the ones you have, or retry in a moment", v.Unproven.PerClient())
	}
	if v.Pending.Acquire(key) != SlotTaken {
		v.Unproven.Release(key)
		return nil, fmt.Errorf("too many WebRTC offers waiting for ICE to start (limit %d); retry in a moment", v.Limits.MaxPendingOffers)
	}
	return &Offer{v: v, key: key, slot: v.Pending}, nil
}

// ErrNoHandshakeSlot: an offer's viewer started ICE while every
// handshake slot (or its client's share) was taken. Its viewer is dropped
// rather than kept waiting: its ICE and DTLS timers run in the browser,
// the slots free only as fast as handshakes finish, and a player retries
// a failed connection anyway, where a held one would sit in pending with
// its reader for seconds.
var ErrNoHandshakeSlot = errors.New("ICE started while every WebRTC handshake slot was taken")

// StartHandshake trades the offer's pending slot for a handshake slot,
// as its viewer's ICE starts; ErrNoHandshakeSlot when none is free: the
// offer then holds only its Unproven slot.
func (o *Offer) StartHandshake() error {
	o.slot.Release(o.key)
	o.slot = nil
	if o.v.Handshakes.Acquire(o.key) != SlotTaken {
		return ErrNoHandshakeSlot
	}
	o.slot = o.v.Handshakes
	return nil
}

// Release gives back every slot the offer holds.
func (o *Offer) Release() {
	if o.slot != nil {
		o.slot.Release(o.key)
		o.slot = nil
	}
	o.v.Unproven.Release(o.key)
}
