package abr

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// rig is a real hub path with one rung, written by the test: the source
// an IDR every gop pictures with audio between them, the rung the same
// pictures lag pictures later (a transcoder's delay), with IDRs where
// the source has them and where a viewer asked for one.
type rig struct {
	t         *testing.T
	h         *hub.Hub
	main      *hub.Reader
	pub, rung *hub.Publisher
	sw        *Switch
	now       time.Time
	gop, lag  int
	n         int
	idrAfter  int64
	askedIDR  bool
	rungOff   bool // the rung writes nothing (its transcode refused)
	noAsk     bool // the rung ignores requests for an IDR
	fromRung  map[*av.AccessUnit]bool
	got       []hub.Frame
}

const frame = av.ClockRate / 30

func newRig(t *testing.T) *rig {
	r := &rig{t: t, h: hub.New(hub.Config{}), now: t0, gop: 10, lag: 2, fromRung: map[*av.AccessUnit]bool{}}
	var err error
	if r.pub, err = r.h.Publish("live/a", "192.0.2.1:1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.pub.Close)
	r.pub.SetAudio(true)
	if r.rung, err = r.pub.AddLadderRendition("360p"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.rung.Close)
	if r.main, err = r.h.AddReader("live/a", "viewer"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.main.Close)
	r.main.AttachAV()
	r.sw = New(Config{
		Main:  r.main,
		Rungs: []hub.Rung{{ID: hub.SourceRung, Height: 720, Bitrate: 2_500_000}, {ID: "360p", Height: 360, Bitrate: 700_000}},
		Open: func(id string) (RungReader, error) {
			return r.h.AddLadderReader("live/a", id, "viewer")
		},
		RequestIDR: func(id string, after int64) { r.h.RequestLadderIDR("live/a", id, after) },
		Switches:   &Counters{},
		Now:        func() time.Time { return r.now },
	})
	t.Cleanup(r.sw.Close)
	return r
}

// step writes the next source picture and its audio, the rung's picture
// lag behind, and hands the viewer everything the switch gives.
func (r *rig) step() {
	pts := int64(r.n) * frame
	r.pub.Write(&av.AccessUnit{PTS: pts, IDR: r.n%r.gop == 0})
	r.pub.WriteAudio(&av.AudioFrame{PTS: pts})
	if k := r.n - r.lag; k >= 0 && !r.rungOff {
		kpts := int64(k) * frame
		if after, ok := r.rung.TakeIDRRequest(); ok && !r.noAsk {
			r.idrAfter, r.askedIDR = after, true
		}
		idr := k%r.gop == 0
		if r.askedIDR && kpts > r.idrAfter {
			idr, r.askedIDR = true, false
		}
		au := &av.AccessUnit{PTS: kpts, IDR: idr}
		r.fromRung[au] = true
		r.rung.Write(au)
	}
	r.n++
	r.now = r.now.Add(time.Second / 30)
	for {
		f, ok, err := r.sw.Poll()
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			return
		}
		if f.Video != nil {
			r.sw.CountSent(8, 10_000) // as the sender does: 2.4 Mbit/s at 30 pictures a second
		}
		r.got = append(r.got, f)
	}
}

func (r *rig) run(frames int) {
	for range frames {
		r.step()
	}
}

// check verifies the viewer's frames: video PTS always forward, each move
// at an IDR of the rendition moved to, audio every picture without a
// gap; it returns the rung of each video frame in order (0 source, 1
// the rung) as moves.
func (r *rig) check() (moves []int) {
	r.t.Helper()
	var last int64 = -1
	var lastAudio int64 = -1
	cur := -1
	for i, f := range r.got {
		if f.Audio != nil {
			if lastAudio >= 0 && f.Audio.PTS != lastAudio+frame {
				r.t.Fatalf("frame %d: audio %d after %d", i, f.Audio.PTS, lastAudio)
			}
			lastAudio = f.Audio.PTS
			continue
		}
		au := f.Video
		if au.PTS <= last {
			r.t.Fatalf("frame %d: video PTS %d after %d", i, au.PTS, last)
		}
		last = au.PTS
		rung := 0
		if r.fromRung[au] {
			rung = 1
		}
		if rung != cur {
			if !au.IDR {
				r.t.Fatalf("frame %d: moved to rung %d at a picture that is no IDR", i, rung)
			}
			cur = rung
			moves = append(moves, rung)
		}
	}
	return moves
}

func TestSwitchDownAndUpAtIDRs(t *testing.T) {
	r := newRig(t)
	r.run(25)
	r.sw.Pin(1)
	r.run(10)
	if _, a, _ := r.sw.State(); a != 1 {
		t.Fatalf("active %d after the pin; want the rung", a)
	}
	r.sw.Pin(0)
	r.run(25)
	if _, a, _ := r.sw.State(); a != 0 {
		t.Fatalf("active %d after pinning the source", a)
	}
	if moves := r.check(); len(moves) != 3 || moves[0] != 0 || moves[1] != 1 || moves[2] != 0 {
		t.Fatalf("rungs in order %v; want source, rung, source", moves)
	}
	if up, down := r.sw.cfg.Switches.Up.Load(), r.sw.cfg.Switches.Down.Load(); up != 1 || down != 1 {
		t.Fatalf("switches up %d down %d", up, down)
	}
}

// TestSwitchDownIsQuick: the viewer's picture is held for no more than
// the rung's delay and the evaluation step when it moves down mid-GOP.
func TestSwitchDownIsQuick(t *testing.T) {
	r := newRig(t)
	r.run(13) // mid-GOP
	r.sw.Pin(1)
	r.run(12)
	var gap int64
	var last int64 = -1
	for _, f := range r.got {
		if v := f.Video; v != nil {
			if last >= 0 {
				gap = max(gap, v.PTS-last)
			}
			last = v.PTS
		}
	}
	// The rung lags 2 pictures; the switch evaluates every 250 ms.
	if gap > 6*frame {
		t.Fatalf("picture held %d ms; want a few pictures", gap*1000/av.ClockRate)
	}
	if moves := r.check(); len(moves) != 2 {
		t.Fatalf("rungs in order %v", moves)
	}
}

// TestSwitchWaitsForAnIDR: a rung that does not answer the request for
// an IDR is moved to at its next own one, never at another picture.
func TestSwitchWaitsForAnIDR(t *testing.T) {
	r := newRig(t)
	r.lag, r.noAsk = 0, true
	r.run(13)
	r.sw.Pin(1)
	r.run(12)
	if moves := r.check(); len(moves) != 2 {
		t.Fatalf("rungs in order %v", moves)
	}
}

// TestSwitchRefusedRungKeepsSource: a rung whose transcode never starts
// costs the viewer nothing: its source video never stops, and the move
// is given up.
func TestSwitchRefusedRungKeepsSource(t *testing.T) {
	r := newRig(t)
	r.rungOff = true
	r.run(10)
	r.sw.Pin(1)
	r.run(int(MoveTimeout/(time.Second/30)) + 30)
	if moves := r.check(); len(moves) != 1 || moves[0] != 0 {
		t.Fatalf("rungs in order %v; want the source throughout", moves)
	}
	video := 0
	for _, f := range r.got {
		if f.Video != nil {
			video++
		}
	}
	if video != r.n {
		t.Fatalf("%d of %d source pictures; want every one", video, r.n)
	}
}

// TestSwitchRungEnds: a rung that ends (its publisher left) sends the
// viewer back to the source at the source's next IDR.
func TestSwitchRungEnds(t *testing.T) {
	r := newRig(t)
	r.run(5)
	r.sw.Pin(1)
	r.run(15)
	if _, a, _ := r.sw.State(); a != 1 {
		t.Fatal("not on the rung")
	}
	r.rung.Close()
	r.rungOff = true
	r.run(25)
	if _, a, _ := r.sw.State(); a != 0 {
		t.Fatal("not back on the source")
	}
	if moves := r.check(); len(moves) != 3 || moves[2] != 0 {
		t.Fatalf("rungs in order %v", moves)
	}
}

// TestSwitchLadderComesLater: a viewer that came before its path's
// ladder was planned (the end of the stream's first GOP) is moved once
// it is, by its estimate.
func TestSwitchLadderComesLater(t *testing.T) {
	r := newRig(t)
	rungs := r.sw.rungs
	ready := false
	r.sw = New(Config{
		Main: r.main,
		Refresh: func() []hub.Rung {
			if ready {
				return rungs
			}
			return nil
		},
		Open:       func(id string) (RungReader, error) { return r.h.AddLadderReader("live/a", id, "viewer") },
		RequestIDR: func(id string, after int64) { r.h.RequestLadderIDR("live/a", id, after) },
		Now:        func() time.Time { return r.now },
	})
	t.Cleanup(r.sw.Close)
	// A link that carries 1 Mbit/s of the 2.4 it is sent, cut again and again.
	r.sw.SetEstimate(func() (bwe.Estimate, time.Time) {
		return bwe.Estimate{Bitrate: 1_000_000, LastDecrease: r.now.Add(-100 * time.Millisecond)}, t0
	})
	r.run(60)
	if got, _, _ := r.sw.State(); len(got) != 0 {
		t.Fatalf("ladder %v before the path has one", got)
	}
	ready = true
	r.run(60)
	if _, a, _ := r.sw.State(); a != 1 {
		t.Fatalf("active %d two seconds after the ladder came; want the rung", a)
	}
	if moves := r.check(); len(moves) != 2 || moves[1] != 1 {
		t.Fatalf("rungs in order %v", moves)
	}
}
