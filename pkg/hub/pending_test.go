package hub

import (
	"errors"
	"testing"
)

// Pending readers pass the caps when added, count nowhere until claimed,
// and a claim asks the caps again.
func TestPendingReaders(t *testing.T) {
	h := New(Config{
		MaxReaders:      func(string) int { return 2 },
		MaxReadersTotal: func() int { return 3 },
	})
	pub := mustPublish(t, h, "live/a")
	defer pub.Close()
	pubB := mustPublish(t, h, "live/b")
	defer pubB.Close()

	// Far more pending readers than the cap: none of them fills the path.
	var pending []*Reader
	for range 10 {
		r, err := h.AddPendingReader("live/a", "p")
		if err != nil {
			t.Fatalf("pending reader: %v", err)
		}
		pending = append(pending, r)
	}
	if st := h.State("live/a"); st.Readers != 0 {
		t.Fatalf("State.Readers %d with only pending readers, want 0", st.Readers)
	}
	if n := pub.Stats().Readers; n != 0 {
		t.Fatalf("Stats.Readers %d with only pending readers, want 0", n)
	}
	for _, ps := range h.Paths() {
		if ps.Readers != 0 || len(ps.Sessions) != 0 {
			t.Fatalf("Paths %s: %d readers, %d sessions; want none", ps.Name, ps.Readers, len(ps.Sessions))
		}
	}

	// Real viewers still get in, up to the cap.
	if err := pending[0].Claim(); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := pending[0].Claim(); err != nil {
		t.Fatalf("claiming twice: %v", err)
	}
	viewer := mustReader(t, h, "live/a", "v")
	if st := h.State("live/a"); st.Readers != 2 {
		t.Fatalf("State.Readers %d, want 2", st.Readers)
	}
	// Full: a new pending reader is refused at once, and so is a claim.
	if _, err := h.AddPendingReader("live/a", "late"); !errors.Is(err, ErrPathFull) {
		t.Fatalf("pending reader on a full path: %v, want ErrPathFull", err)
	}
	if err := pending[1].Claim(); !errors.Is(err, ErrPathFull) {
		t.Fatalf("claim on a full path: %v, want ErrPathFull", err)
	}
	// A slot freed is a claim that passes.
	viewer.Close()
	if err := pending[1].Claim(); err != nil {
		t.Fatalf("claim after a viewer left: %v", err)
	}

	// The server-wide cap counts claimed readers alone as well.
	pb := mustReader(t, h, "live/b", "b")
	defer pb.Close()
	if err := pending[2].Claim(); !errors.Is(err, ErrPathFull) {
		t.Fatalf("claim: %v, want ErrPathFull", err)
	}
	pending[0].Close()
	pb2, err := h.AddPendingReader("live/b", "b2")
	if err != nil {
		t.Fatalf("pending reader on b: %v", err)
	}
	if err := pb2.Claim(); err != nil {
		t.Fatalf("claim on b with 2 of 3 counted: %v", err)
	}
	if err := pending[2].Claim(); !errors.Is(err, ErrServerFull) {
		t.Fatalf("claim with the server full: %v, want ErrServerFull", err)
	}

	// Closing pending readers frees nothing they never held.
	for _, r := range pending[2:] {
		r.Close()
	}
	if err := pending[3].Claim(); !errors.Is(err, ErrEnded) {
		t.Fatalf("claim after Close: %v, want ErrEnded", err)
	}
	if st := h.State("live/a"); st.Readers != 1 {
		t.Fatalf("State.Readers %d after the pending ones closed, want 1", st.Readers)
	}
	pending[1].Close()
	pb2.Close()
	if h.total != 1 {
		t.Fatalf("hub total %d, want 1 (live/b's viewer)", h.total)
	}
}

// A pending reader attached without Claim counts from then on, and its
// path ending frees its slot like any reader's.
func TestPendingReaderAttachCounts(t *testing.T) {
	h := New(Config{MaxReaders: func(string) int { return 1 }})
	pub := mustPublish(t, h, "live/a")
	r, err := h.AddPendingReader("live/a", "p")
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.AddPendingReader("live/a", "q")
	if err != nil {
		t.Fatal(err)
	}
	r.Attach()
	if st := h.State("live/a"); st.Readers != 1 {
		t.Fatalf("State.Readers %d after Attach, want 1", st.Readers)
	}
	if err := other.Claim(); !errors.Is(err, ErrPathFull) {
		t.Fatalf("claim beside an attached reader: %v, want ErrPathFull", err)
	}
	pub.Close()
	if h.total != 0 {
		t.Fatalf("hub total %d after the path ended, want 0", h.total)
	}
	if err := other.Claim(); !errors.Is(err, ErrEnded) {
		t.Fatalf("claim after the path ended: %v, want ErrEnded", err)
	}
	r.Close()
	other.Close()
}

// A pending reader of the path's H.264 rendition claims a seat under the
// path's one cap, which both renditions share.
func TestPendingRenditionReader(t *testing.T) {
	h := New(Config{MaxReaders: func(string) int { return 1 }})
	pub := mustPublish(t, h, "live/a")
	if _, err := pub.AddRendition(); err != nil {
		t.Fatal(err)
	}
	tr, err := h.AddPendingTranscodedReader("live/a", "t")
	if err != nil {
		t.Fatalf("pending rendition reader: %v", err)
	}
	defer tr.Close()
	orig := mustReader(t, h, "live/a", "o")
	if err := tr.Claim(); !errors.Is(err, ErrPathFull) {
		t.Fatalf("claim with the original rendition's reader in the seat: %v, want ErrPathFull", err)
	}
	orig.Close()
	if err := tr.Claim(); err != nil {
		t.Fatalf("claim with the seat free: %v", err)
	}
	if st := h.State("live/a"); st.Readers != 1 {
		t.Fatalf("State.Readers %d, want the rendition's reader", st.Readers)
	}
	if _, err := h.AddPendingReader("live/a", "late"); !errors.Is(err, ErrPathFull) {
		t.Fatalf("pending reader with the rendition's reader in the seat: %v, want ErrPathFull", err)
	}
}
