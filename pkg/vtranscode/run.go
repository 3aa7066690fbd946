package vtranscode

// The transcoder's goroutine (Run): decode, convert, encode, emit, and the
// summaries of what went wrong.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/avcodec"
)

// Run decodes, converts, encodes and emits the units Write queues until
// Close. It is the transcoder's one goroutine; its caller owns it.
func (t *Transcoder) Run() {
	if !t.claimed.CompareAndSwap(false, true) {
		return // closed before it ran, or run twice
	}
	defer close(t.exited)
	// Locked so the thread CPU clock measures this goroutine's work alone;
	// libx264 and the decoder run single-threaded on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer t.free()
	cpu0 := threadCPU()
	winCPU, winStart := cpu0, time.Now()
	var dropSeen uint64
	for {
		select {
		case <-t.done:
			return
		case au := <-t.in:
			t.queued.Add(-int64(unitBytes(au)))
			t.process(au)
			now := threadCPU()
			t.cpu.Store(int64(now - cpu0))
			if wall := time.Since(winStart); wall >= loadWindow {
				t.loadX1e6.Store(int64(1e6 * float64(now-winCPU) / float64(wall)))
				winCPU, winStart = now, time.Now()
			}
			if d := t.dropped.Load(); d != dropSeen {
				t.note(fmt.Errorf("the encoder fell behind: %d access units dropped up to the next IDR", d-dropSeen))
				dropSeen = d
			}
		}
	}
}

func (t *Transcoder) free() {
	t.problems.Close()
	if t.enc != nil {
		t.enc.Free()
		t.enc = nil
	}
	if t.dec != nil {
		t.dec.Free()
		t.dec = nil
	}
}

func (t *Transcoder) process(au *av.AccessUnit) {
	if !t.started {
		if !au.IDR {
			return // a decoder cannot start on anything else
		}
		t.started = true
	}
	t.arrived[t.next%arrivals] = arrival{pts: au.PTS, at: au.Arrival, idr: au.IDR}
	t.next++
	t.annexB = t.annexB[:0]
	for _, n := range au.NALUs {
		t.annexB = append(t.annexB, 0, 0, 0, 1)
		t.annexB = append(t.annexB, n...)
	}
	if len(t.annexB) == 0 {
		return
	}
	if err := t.dec.Send(t.annexB, au.PTS); err != nil {
		t.fail(fmt.Errorf("decoding: %w", err))
		return
	}
	for {
		f, err := t.dec.Receive()
		if err != nil {
			t.fail(fmt.Errorf("decoding: %w", err))
			return
		}
		if f == nil {
			return
		}
		if err := t.encodeFrame(f); err != nil {
			t.fail(err)
		}
	}
}

func (t *Transcoder) encodeFrame(f *avcodec.Frame) error {
	pts, ok := f.PTS()
	if !ok {
		return errors.New("decoded picture without a timestamp; skipped")
	}
	if t.haveOut && pts <= t.lastOut {
		return nil // before the cut-over, or a repeated timestamp
	}
	if !t.keepForRate(pts) {
		t.skipped.Add(1)
		return nil
	}
	w, h := f.Size()
	// libx264 through FFmpeg 5.1 does not apply a new ABR bitrate to a
	// running encoder (the reconfiguration keeps the old rate), so a new
	// rate takes a new encoder, whose first picture is an IDR. The ingest
	// asks only for large changes, so this is rare.
	newRate := false
	if b := int(t.bitrate.Load()); b != 0 && b != t.rate {
		t.rate, newRate = b, true
	}
	if t.enc != nil && (newRate || t.encIn != [2]int{w, h}) {
		t.enc.Free()
		t.enc = nil
	}
	if t.enc == nil {
		rate := t.outFPS()
		fps := max(1, int(rate+0.5))
		keyint := max(1, int(t.cfg.KeyframeInterval.Seconds()*rate+0.5))
		ow, oh := OutputSize(w, h, t.cfg.MaxHeight)
		var err error
		if t.enc, err = avcodec.OpenEncoder(avcodec.EncoderParams{Width: ow, Height: oh, FPS: fps,
			Bitrate: t.rate, Keyint: keyint, Preset: t.cfg.Preset}); err != nil {
			return err
		}
		t.encIn = [2]int{w, h}
		t.outSize.Store(int64(ow)<<32 | int64(oh))
	}
	in, err := t.enc.Prepare(f)
	if err != nil {
		return err
	}
	if err := t.enc.EncodeIDR(in, pts, t.cfg.FollowIDR && t.sourceIDR(pts) || t.requestedIDR(pts)); err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	for {
		data, opts, key, err := t.enc.Receive()
		if err != nil {
			return fmt.Errorf("encoding: %w", err)
		}
		if data == nil {
			return nil
		}
		au, err := t.output(data, opts, key)
		t.enc.Unref()
		if err != nil {
			return err
		}
		t.emit(au)
	}
}

// output turns one coded picture into an access unit the hub takes.
func (t *Transcoder) output(data []byte, pts int64, key bool) (*av.AccessUnit, error) {
	var nalus h264.AnnexB
	if err := nalus.Unmarshal(bytes.Clone(data)); err != nil {
		return nil, fmt.Errorf("libx264 output: %w", err)
	}
	au := &av.AccessUnit{PTS: pts, NALUs: nalus, IDR: key}
	for _, n := range nalus {
		au.Size += len(n)
	}
	for _, a := range t.arrived {
		if a.pts == pts && !a.at.IsZero() {
			au.Arrival = a.at
			lat := time.Since(a.at)
			t.latSum.Add(int64(lat))
			t.latCount.Add(1)
			if int64(lat) > t.latMax.Load() {
				t.latMax.Store(int64(lat))
			}
			break
		}
	}
	t.lastOut, t.haveOut = pts, true
	t.framesOut.Add(1)
	if key {
		t.idrsOut.Add(1)
	}
	return au, nil
}

// requestedIDR reports whether the picture at pts answers RequestIDR.
func (t *Transcoder) requestedIDR(pts int64) bool {
	if !t.idrWanted.Load() || pts <= t.idrAfter.Load() {
		return false
	}
	return t.idrWanted.CompareAndSwap(true, false)
}

// sourceIDR reports whether the picture presented at pts came from one of
// the source's IDRs.
func (t *Transcoder) sourceIDR(pts int64) bool {
	for _, a := range t.arrived {
		if a.idr && a.pts == pts {
			return true
		}
	}
	return false
}

// fail counts a skipped picture and notes why.
func (t *Transcoder) fail(err error) {
	t.errors.Add(1)
	t.note(err)
}

// note logs a problem, summarised at most every summaryEvery.
func (t *Transcoder) note(err error) {
	if n := t.problems.Note("video", err); n > 0 {
		t.writeProblems("video", n, err)
	}
}

func (t *Transcoder) writeProblems(_ string, n int, last error) {
	t.log.Warn("video transcode problems (pictures skipped)", "count", n,
		"errors_total", t.errors.Load(), "dropped_total", t.dropped.Load(), "err", last)
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// loadWindow is how long Stats.Load averages over: a few GOPs, so one
// IDR's cost does not swing it.
const loadWindow = 4 * time.Second

// outFPS is the output's frame rate: the source's, capped by MaxFPS.
func (t *Transcoder) outFPS() float64 {
	if t.cfg.MaxFPS > 0 && t.cfg.MaxFPS < t.cfg.FPS {
		return t.cfg.MaxFPS
	}
	return t.cfg.FPS
}

// keepForRate decides, in presentation order, whether the picture at pts
// is encoded under MaxFPS: at most one picture per slot of the output
// interval, slots counted from a base PTS, so a 60 fps source keeps every
// second picture and a 50 fps one three of five, evenly, and a 59.94 fps
// one does not drift. A quarter slot of tolerance absorbs timestamps the
// muxer rounded. A jump (a gap, a new publisher's clock) rebases.
func (t *Transcoder) keepForRate(pts int64) bool {
	if t.cfg.MaxFPS <= 0 {
		return true
	}
	step := av.ClockRate / t.cfg.MaxFPS
	slot := int64(float64(pts-t.rateBase)/step + 0.25)
	if !t.haveSlot || slot < t.lastSlot-4 || slot > t.lastSlot+4*int64(t.cfg.MaxFPS) {
		t.rateBase, t.lastSlot, t.haveSlot = pts, 0, true
		return true
	}
	if slot <= t.lastSlot {
		return false
	}
	t.lastSlot = slot
	return true
}

// OutputSize is the encoder's picture size for a w×h source under
// maxHeight (0: no cap): the source's aspect ratio, both sides even
// (4:2:0 needs it), never larger than the source.
func OutputSize(w, h, maxHeight int) (int, int) {
	if maxHeight > 0 && h > maxHeight {
		w = int(int64(w)*int64(maxHeight)*2/int64(h)+1) / 2 // rounded
		h = maxHeight
	}
	return max(2, w&^1), max(2, h&^1)
}
