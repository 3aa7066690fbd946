package hub

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

func TestReaderCaps(t *testing.T) {
	var perPath, total atomic.Int64
	perPath.Store(2)
	total.Store(3)
	h := New(Config{
		MaxReaders: func(path string) int {
			if path == "live/open" {
				return 0
			}
			return int(perPath.Load())
		},
		MaxReadersTotal: func() int { return int(total.Load()) },
	})
	mustPublish(t, h, "live/a")
	mustPublish(t, h, "live/open")

	mustReader(t, h, "live/a", "a1")
	a2 := mustReader(t, h, "live/a", "a2")
	a2.Attach()
	if _, err := h.AddReader("live/a", "a3"); !errors.Is(err, ErrPathFull) {
		t.Fatalf("third reader on a path capped at 2: err = %v, want ErrPathFull", err)
	}
	o1 := mustReader(t, h, "live/open", "o1")
	if _, err := h.AddReader("live/open", "o2"); !errors.Is(err, ErrServerFull) {
		t.Fatalf("fourth reader with a total cap of 3: err = %v, want ErrServerFull", err)
	}
	if n := h.ReadersTotal(); n != 3 {
		t.Errorf("ReadersTotal() = %d, want 3", n)
	}

	// Closing frees the slot (twice is harmless), reserved or attached alike.
	a2.Close()
	a2.Close()
	mustReader(t, h, "live/a", "a3")
	o1.Close()
	mustReader(t, h, "live/open", "o2")
	if n := h.ReadersTotal(); n != 3 {
		t.Errorf("ReadersTotal() = %d, want 3", n)
	}

	// Caps are read at AddReader time, so a reload applies to the next one.
	total.Store(0)
	perPath.Store(3)
	mustReader(t, h, "live/a", "a4")
	if _, err := h.AddReader("live/a", "a5"); !errors.Is(err, ErrPathFull) {
		t.Fatalf("after raising the path cap to 3: err = %v, want ErrPathFull", err)
	}
}

func TestPathBusyAndNoPublisher(t *testing.T) {
	h := New(Config{})
	if _, err := h.AddReader("live/a", "s"); !errors.Is(err, ErrNoPublisher) {
		t.Fatalf("AddReader on an unpublished path: err = %v, want ErrNoPublisher", err)
	}
	if h.HasPublisher("live/a") {
		t.Fatal("HasPublisher before Publish")
	}
	pub := mustPublish(t, h, "live/a")
	if !h.HasPublisher("live/a") {
		t.Fatal("HasPublisher after Publish is false")
	}
	if _, err := h.Publish("live/a", "127.0.0.1:6000"); !errors.Is(err, ErrPathBusy) {
		t.Fatalf("second publisher: err = %v, want ErrPathBusy", err)
	}
	pub.Close()
	pub.Close()
	if h.HasPublisher("live/a") {
		t.Fatal("HasPublisher after Close is true")
	}
	mustPublish(t, h, "live/a")
}

func TestPublisherCloseEndsReaders(t *testing.T) {
	h := New(Config{})
	pub := mustPublish(t, h, "live/a")
	pub.SetInfo(av.StreamInfo{Codec: "H264", Width: 1280, Height: 720})
	attached := mustReader(t, h, "live/a", "attached")
	reserved := mustReader(t, h, "live/a", "reserved")
	attached.Attach()
	pub.Write(mkAU(0, true))

	blocked := make(chan error, 1)
	go func() {
		// Take the queued frame, then block until the publisher leaves.
		if _, _, err := recvVideo(t.Context(), attached); err != nil {
			blocked <- err
			return
		}
		_, _, err := recvVideo(t.Context(), attached)
		blocked <- err
	}()
	pub.Close()
	if err := <-blocked; !errors.Is(err, ErrEnded) {
		t.Errorf("blocked Recv: err = %v, want ErrEnded", err)
	}
	if _, _, err := recvVideo(t.Context(), reserved); !errors.Is(err, ErrEnded) {
		t.Errorf("reserved reader Recv: err = %v, want ErrEnded", err)
	}
	if n := h.ReadersTotal(); n != 0 {
		t.Errorf("ReadersTotal() after publisher close = %d, want 0", n)
	}
	if _, err := h.AddReader("live/a", "late"); !errors.Is(err, ErrNoPublisher) {
		t.Errorf("AddReader after close: err = %v, want ErrNoPublisher", err)
	}
	pub.Write(mkAU(1, true)) // a no-op, not a panic

	// A new publisher is a new generation: old readers stay ended and their
	// late Close does not touch the new path's counts.
	pub2 := mustPublish(t, h, "live/a")
	fresh := mustReader(t, h, "live/a", "fresh")
	fresh.Attach()
	attached.Attach()
	attached.Close()
	reserved.Close()
	pub2.Write(mkAU(10, true))
	if seqs := drain(t, fresh); len(seqs) != 1 || seqs[0].seq != 10 {
		t.Errorf("new generation reader got %v, want [10]", seqs)
	}
	if _, _, err := recvVideo(t.Context(), attached); !errors.Is(err, ErrEnded) {
		t.Errorf("old reader after re-publish: err = %v, want ErrEnded", err)
	}
	if n := h.ReadersTotal(); n != 1 {
		t.Errorf("ReadersTotal() = %d, want 1", n)
	}
	ps := h.Paths()
	if len(ps) != 1 || ps[0].Readers != 1 || ps[0].FramesIn != 1 || ps[0].Info.Codec != "" {
		t.Errorf("Paths() = %+v, want a fresh generation with 1 reader and 1 frame", ps)
	}
}

func TestReaderCloseEndsRecv(t *testing.T) {
	h := New(Config{})
	mustPublish(t, h, "live/a")
	r := mustReader(t, h, "live/a", "s")
	r.Attach()
	ended := make(chan error, 1)
	go func() {
		_, _, err := recvVideo(context.Background(), r)
		ended <- err
	}()
	r.Close()
	if err := <-ended; !errors.Is(err, ErrEnded) {
		t.Errorf("Recv after reader Close: err = %v, want ErrEnded", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r2 := mustReader(t, h, "live/a", "s2")
	if _, _, err := recvVideo(ctx, r2); !errors.Is(err, context.Canceled) {
		t.Errorf("Recv on a cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestPathsStats(t *testing.T) {
	h := New(Config{QueueSize: 2})
	mustPublish(t, h, "live/b")
	pub := mustPublish(t, h, "live/a")
	info := av.StreamInfo{Codec: "H264", Profile: "High", Width: 1920, Height: 1080, FPS: 30}
	pub.SetInfo(info)
	keep := mustReader(t, h, "live/a", "keep")
	leave := mustReader(t, h, "live/a", "leave")
	mustReader(t, h, "live/a", "idle")
	keep.Attach()
	leave.Attach()
	for i := range 5 {
		pub.Write(mkAU(i, i == 0)) // frames 2, 3, 4 overflow both queues
	}
	if _, _, err := recvVideo(t.Context(), keep); err != nil {
		t.Fatal(err)
	}
	leave.Close()

	ps := h.Paths()
	if len(ps) != 2 || ps[0].Name != "live/a" || ps[1].Name != "live/b" {
		t.Fatalf("Paths() names = %+v, want live/a, live/b", ps)
	}
	a := ps[0]
	if !a.Publisher || a.Remote != "127.0.0.1:5000" || a.Info != info || a.Readers != 2 ||
		a.FramesIn != 5 || a.BytesIn != 500 || a.FramesDropped != 6 || a.Since.IsZero() {
		t.Errorf("live/a stats = %+v", a)
	}
	want := []ReaderStats{
		{Session: "keep", Attached: true, Dropped: 3, Delivered: 1},
		{Session: "idle"},
	}
	if len(a.Sessions) != 2 || a.Sessions[0] != want[0] || a.Sessions[1] != want[1] {
		t.Errorf("Sessions = %+v, want %+v", a.Sessions, want)
	}
}

// TestConcurrentAttachWrite races viewers joining, reading and leaving
// against a publisher writing flat out; -race checks the memory model and
// every viewer checks the delivery contract.
func TestConcurrentAttachWrite(t *testing.T) {
	h := New(Config{QueueSize: 16, GOPCacheFrames: 12, MaxReadersTotal: func() int { return 6 }})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	pub, err := h.Publish("live/a", "127.0.0.1:5000")
	if err != nil {
		t.Fatal(err)
	}

	var sessions atomic.Int64
	var viewers sync.WaitGroup
	for v := range 8 {
		viewers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(v), 1))
			for {
				r, err := h.AddReader("live/a", "v")
				switch {
				case errors.Is(err, ErrNoPublisher):
					return
				case errors.Is(err, ErrServerFull):
					continue
				case err != nil:
					t.Errorf("AddReader: %v", err)
					return
				}
				sessions.Add(1)
				r.Attach()
				var seqs []got
				for range rng.IntN(80) {
					au, catchUp, err := recvVideo(t.Context(), r)
					if err != nil {
						if !errors.Is(err, ErrEnded) {
							t.Errorf("Recv: %v", err)
						}
						break
					}
					seqs = append(seqs, got{int(au.PTS), au.IDR, catchUp})
				}
				r.Close()
				if err := checkSequence(seqs); err != nil {
					t.Errorf("viewer: %v", err)
				}
				if r.Dropped() == 0 && gaps(seqs) != 0 {
					t.Errorf("viewer without drops has gaps: %v", seqs)
				}
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, p := range h.Paths() {
				if p.Readers > 6 {
					t.Errorf("%d readers on a server capped at 6", p.Readers)
				}
			}
		}
	})

	for i := range 20000 {
		pub.Write(mkAU(i, i%15 == 0))
	}
	pub.Close()
	viewers.Wait()
	cancel()
	wg.Wait()
	if sessions.Load() < 8 {
		t.Errorf("only %d viewer sessions ran", sessions.Load())
	}
	if n := h.ReadersTotal(); n != 0 {
		t.Errorf("ReadersTotal() = %d after everyone left, want 0", n)
	}
}
