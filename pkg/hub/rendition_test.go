package hub

import (
	"errors"
	"slices"
	"testing"
)

// A path's H.264 rendition is a path of its own for video, with the
// path's audio, the path's reader cap (shared by both renditions), and no
// life beyond the path's publisher.
func TestRendition(t *testing.T) {
	h := New(Config{MaxReaders: func(name string) int {
		if name != "live/a" {
			t.Errorf("reader cap asked for %q, want the path's own name", name)
		}
		return 2
	}})
	pub := mustPublish(t, h, "live/a")
	if _, err := h.AddTranscodedReader("live/a", "s0"); !errors.Is(err, ErrNoPublisher) {
		t.Fatalf("rendition reader before AddRendition: %v, want ErrNoPublisher", err)
	}
	pub.SetAudio(true)
	rend, err := pub.AddRendition()
	if err != nil {
		t.Fatal(err)
	}
	if !h.HasRendition("live/a") {
		t.Fatal("HasRendition false after AddRendition")
	}
	orig := mustReader(t, h, "live/a", "s1")
	tr, err := h.AddTranscodedReader("live/a", "s2")
	if err != nil {
		t.Fatalf("rendition reader: %v", err)
	}
	t.Cleanup(tr.Close)
	if !tr.HasAudio() {
		t.Error("the rendition has no audio though the path has")
	}
	if _, err := h.AddTranscodedReader("live/a", "s3"); !errors.Is(err, ErrPathFull) {
		t.Errorf("a third reader past the path's cap of 2 (one in each rendition): %v, want ErrPathFull", err)
	}
	orig.AttachAV()
	tr.AttachAV()
	// Each rendition's video reaches only its readers; audio reaches both.
	pub.Write(mkAU(0, true))
	rend.Write(mkAU(100, true))
	pub.WriteAudio(mkAF(1))
	if got, want := drainFrames(t, orig), []string{"V0", "A1"}; !slices.Equal(got, want) {
		t.Errorf("original reader got %v, want %v", got, want)
	}
	if got, want := drainFrames(t, tr), []string{"V100", "A1"}; !slices.Equal(got, want) {
		t.Errorf("rendition reader got %v, want %v", got, want)
	}

	// Dropping the rendition ends its readers, not the path's.
	pub.DropRendition()
	if _, _, err := recvVideo(t.Context(), tr); !errors.Is(err, ErrEnded) {
		t.Errorf("rendition reader after DropRendition: %v, want ErrEnded", err)
	}
	if h.HasRendition("live/a") {
		t.Error("HasRendition true after DropRendition")
	}
	pub.Write(mkAU(1, false))
	if got := drainFrames(t, orig); !slices.Equal(got, []string{"V1"}) {
		t.Errorf("original reader after the drop got %v", got)
	}

	// Closing the path's publisher closes a new rendition with it.
	if _, err := pub.AddRendition(); err != nil {
		t.Fatal(err)
	}
	pub.Close()
	if h.HasRendition("live/a") {
		t.Error("the rendition outlived the path's publisher")
	}
}

// An edge keeps its pull while anyone watches the path, in either
// rendition.
func TestRenditionReadersCount(t *testing.T) {
	h := New(Config{})
	pub := mustPublish(t, h, "live/a")
	if _, err := pub.AddRendition(); err != nil {
		t.Fatal(err)
	}
	tr, err := h.AddTranscodedReader("live/a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	if st := h.State("live/a"); st.Readers != 1 {
		t.Errorf("state %+v, want the rendition's reader counted", st)
	}
}

// TestRenditionOfFormerPublisher: a publisher taken over, or closed,
// whose demuxer still reads what was in flight, makes no rendition: it
// would take over its successor's, or be left behind with nobody to
// close it.
func TestRenditionOfFormerPublisher(t *testing.T) {
	h := New(Config{})
	old := mustPublish(t, h, "live/a")
	cur, err := h.PublishWith("live/a", "127.0.0.1:5001", PublishOptions{Override: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cur.Close)
	rend, err := cur.AddRendition()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.AddRendition(); !errors.Is(err, ErrEnded) {
		t.Errorf("rendition of a taken-over publisher: %v, want ErrEnded", err)
	}
	if p := h.paths[TranscodedName("live/a")]; p == nil || p.pub != rend {
		t.Error("the current publisher's rendition was taken over by the former publisher's")
	}
	cur.Close()
	if _, err := cur.AddRendition(); !errors.Is(err, ErrEnded) {
		t.Errorf("rendition after Close: %v, want ErrEnded", err)
	}
	if h.HasRendition("live/a") {
		t.Error("a rendition is left after its publisher closed")
	}
}
