package whepclient

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of what a session received.
type Stats struct {
	Packets uint64 // RTP packets read
	Bytes   uint64 // RTP packet bytes, headers included
	Frames  uint64 // packets with the marker bit, i.e. pictures completed

	// SeqGaps is the number of sequence numbers still missing: a jump
	// counts the skipped numbers, and a late packet that fills one of the
	// last 64 positions takes it back out.
	SeqGaps    uint64
	Reordered  uint64 // packets that arrived after a higher sequence number
	Duplicates uint64 // packets whose sequence number was already seen

	// Keyframes counts pictures (distinct RTP timestamps) carrying an IDR
	// slice, detected from the RTP payload headers in both modes.
	Keyframes uint64

	// The audio track's RTP packets and bytes (headers included), which
	// the fields above do not count.
	AudioPackets uint64
	AudioBytes   uint64

	// Decode mode only.
	DecodedAUs uint64 // complete access units delivered
	IDRs       uint64 // of which IDR
	BrokenAUs  uint64 // access units dropped because packets were missing
	Width      int
	Height     int

	ConnectedAt   time.Time
	FirstPacketAt time.Time
	FirstIDRAt    time.Time
}

// statsState is written by the read goroutine and pion's callbacks and read
// by Stats from anywhere. Per-packet counters are atomics; rare fields sit
// behind a mutex.
type statsState struct {
	packets, bytes, frames      atomic.Uint64
	seqGaps, reordered, dups    atomic.Uint64
	keyframes                   atomic.Uint64
	decodedAUs, idrs, brokenAUs atomic.Uint64
	audioPackets, audioBytes    atomic.Uint64
	mu                          sync.Mutex
	width, height               int
	connectedAt, firstPacketAt  time.Time
	firstIDRAt                  time.Time
}

func (st *statsState) setConnected(t time.Time) {
	st.mu.Lock()
	st.connectedAt = t
	st.mu.Unlock()
}

func (st *statsState) setFirstPacket(t time.Time) {
	st.mu.Lock()
	st.firstPacketAt = t
	st.mu.Unlock()
}

func (st *statsState) setFirstIDR(t time.Time) {
	st.mu.Lock()
	st.firstIDRAt = t
	st.mu.Unlock()
}

func (st *statsState) setSize(w, h int) {
	st.mu.Lock()
	st.width, st.height = w, h
	st.mu.Unlock()
}

// Stats returns a snapshot of the session's counters.
func (s *Session) Stats() Stats {
	st := &s.stats
	out := Stats{
		Packets:    st.packets.Load(),
		Bytes:      st.bytes.Load(),
		Frames:     st.frames.Load(),
		SeqGaps:    st.seqGaps.Load(),
		Reordered:  st.reordered.Load(),
		Duplicates: st.dups.Load(),
		Keyframes:  st.keyframes.Load(),
		DecodedAUs: st.decodedAUs.Load(),
		IDRs:       st.idrs.Load(),
		BrokenAUs:  st.brokenAUs.Load(),

		AudioPackets: st.audioPackets.Load(),
		AudioBytes:   st.audioBytes.Load(),
	}
	st.mu.Lock()
	out.Width, out.Height = st.width, st.height
	out.ConnectedAt, out.FirstPacketAt, out.FirstIDRAt = st.connectedAt, st.firstPacketAt, st.firstIDRAt
	st.mu.Unlock()
	return out
}
