package hub

import "fmt"

// A pending reader is a viewer that was answered but may never come: a
// WHEP offer whose viewer has not started ICE. It is a member of its path
// (its stream info, its audio, the end of its publisher reach it as they
// reach any reader) but the caps and the viewer counts do not see it until
// Claim, so offers that are never completed cannot fill a path: the path's
// maxReaders and readers.maxTotal count viewers who started to connect.
// The caps are still asked when the pending reader is added, so a path
// already full of viewers refuses a new one at once; the slot itself is
// taken by Claim, which asks them again. How many pending readers may
// exist is the caller's bound (the WHEP server's pending-offer table).

// AddPendingReader is AddReader for a reader that counts nowhere until
// Claim: the caps and the CPU admission refuse it as AddReader would,
// but it holds no slot.
func (h *Hub) AddPendingReader(name, session string) (*Reader, error) {
	return h.addReader(name, session, false)
}

// AddPendingTranscodedReader is AddPendingReader for name's H.264
// rendition (AddTranscodedReader).
func (h *Hub) AddPendingTranscodedReader(name, session string) (*Reader, error) {
	return h.addReader(TranscodedName(name), session, false)
}

// Claim takes the slot of a pending reader, asking the caps again: it
// returns ErrPathFull or ErrServerFull (wrapped with the limit) when the
// path or the server filled up since the reader was added, and ErrEnded
// once the reader was closed or its path ended. The CPU admission is not
// asked again: it measures load, which an answered offer adds nothing to,
// and it said yes when the reader was added. Claiming a reader that
// already counts (AddReader, or claimed before) does nothing.
func (r *Reader) Claim() error {
	return r.h.claim(r, true)
}

// claim counts r, past the caps unless enforce.
func (h *Hub) claim(r *Reader, enforce bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.released:
		return fmt.Errorf("read %q: %w", r.p.name, ErrEnded)
	case r.counted, r.extra:
		return nil
	}
	if enforce {
		if err := h.capsLocked(r.p.name); err != nil {
			return err
		}
	}
	h.countLocked(r)
	return nil
}
