package glass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// Config describes one measurement.
type Config struct {
	SRTURL  string // where the generator publishes, e.g. srt://127.0.0.1:8890?streamid=publish:live/g2g&pkt_size=1316
	WHEPURL string // where the viewer plays the same path

	Width, Height, FPS int    // 640x360 at 30 when zero
	Bitrate            string // encoder -b:v, "1500k" when empty
	GOP                int    // frames between IDRs, 2 s when zero
	// Codec the generator publishes: "h264" (libx264, the default) or
	// "h265" (libx265), both ultrafast, zerolatency, no B-frames.
	Codec string
	// ViewerH265: the viewer offers H.265 besides H.264, so an H.265 path
	// reaches it as published; without it, the path's H.264 rendition.
	ViewerH265 bool

	Warmup   time.Duration // samples from frames created earlier are discarded
	Duration time.Duration // measured time after the warm-up

	FFmpeg        string // "ffmpeg" when empty
	SettingEngine func(*webrtc.SettingEngine)
	Logger        *slog.Logger
}

// Result is a measurement: frame created → its last RTP packet at the
// viewer, for every frame whose stamp was read back.
type Result struct {
	Samples      []time.Duration
	Codec        string // what the viewer received: "h264" or "h265"
	Median, P95  time.Duration
	Min, Max     time.Duration
	Generated    int // frames the generator wrote
	Decoded      int // pictures the decoder returned
	Unreadable   int // decoded pictures whose stamp failed its check
	OutOfStep    int // stamps whose frame number did not match the packets' order
	LostPictures uint64
}

// Run publishes a generated clip, plays it back over WHEP, and measures
// until Warmup+Duration has passed since the viewer connected or ctx ends.
//
// The method: frame N's stamp is written into its pixels just before it
// goes to the encoder (ffmpeg, x264 -tune zerolatency, over SRT, as a
// publisher would), so "created" is capture time. The viewer (pion, the
// same client as the tests) records when each picture's last RTP packet
// arrives, and hands the picture to an ffmpeg decoder only to read the
// stamp back: decode time is not part of the figure. Pictures and arrival
// times are paired in order, and the frame number in the stamp checks
// that pairing. Both clocks are this process's, so only loopback (or one
// machine) gives an honest figure.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var res Result
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred later, so run first)
	defer cancel()

	encoder := []string{"-c:v", "libx264"}
	if cfg.Codec == "h265" {
		encoder = []string{"-c:v", "libx265", "-x265-params", "log-level=error"}
	}
	args := []string{"-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", fmt.Sprintf("%dx%d", cfg.Width, cfg.Height),
		"-r", strconv.Itoa(cfg.FPS), "-i", "pipe:0"}
	args = append(append(args, encoder...), "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0",
		"-g", strconv.Itoa(cfg.GOP), "-b:v", cfg.Bitrate, "-f", "mpegts", cfg.SRTURL)
	enc := exec.CommandContext(ctx, cfg.FFmpeg, args...)
	encIn, err := enc.StdinPipe()
	if err != nil {
		return res, err
	}
	if err := enc.Start(); err != nil {
		return res, fmt.Errorf("start the encoder (%s): %w", cfg.FFmpeg, err)
	}
	var generated int
	wg.Go(func() {
		defer encIn.Close()
		generated = generate(ctx, encIn, cfg)
	})
	wg.Go(func() { _ = enc.Wait() })

	// The server passes H.265 through only to a viewer that offered it.
	received := "h264"
	if cfg.Codec == "h265" && cfg.ViewerH265 {
		received = "hevc"
	}
	dec := exec.CommandContext(ctx, cfg.FFmpeg, "-hide_banner", "-loglevel", "error",
		"-f", received, "-i", "pipe:0", "-fps_mode", "passthrough", "-threads", "1",
		"-f", "rawvideo", "-pix_fmt", "gray", "pipe:1")
	decIn, err := dec.StdinPipe()
	if err != nil {
		return res, err
	}
	decOut, err := dec.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := dec.Start(); err != nil {
		return res, fmt.Errorf("start the decoder: %w", err)
	}

	p := &pairer{arrivals: make(chan time.Time, 1024), pictures: make(chan []byte, 1024)}
	wg.Go(func() {
		defer decIn.Close()
		for {
			select {
			case b := <-p.pictures:
				if _, err := decIn.Write(b); err != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	})

	sess, err := dialWhenLive(ctx, cfg, p)
	if err != nil {
		return res, err
	}
	defer sess.Close()
	connected := time.Now()
	measureFrom := connected.Add(cfg.Warmup)

	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		p.read(decOut, cfg, measureFrom, &res)
		_ = dec.Wait()
	})

	t := time.NewTimer(cfg.Warmup + cfg.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-sess.Done():
		return res, fmt.Errorf("viewer ended: %w", sess.Err())
	}
	res.LostPictures = sess.Stats().BrokenAUs
	cancel()
	<-done
	wg.Wait()
	res.Generated = generated
	res.summarise()
	res.Codec = p.codec()
	if len(res.Samples) == 0 {
		return res, errors.New("no frame's stamp was read back")
	}
	if want := map[string]string{"h264": "h264", "hevc": "h265"}[received]; res.Codec != want {
		return res, fmt.Errorf("the viewer received %s, the decoder expected %s", res.Codec, want)
	}
	return res, nil
}

func (c *Config) defaults() {
	if c.Width == 0 {
		c.Width, c.Height = 640, 360
	}
	if c.FPS == 0 {
		c.FPS = 30
	}
	if c.GOP == 0 {
		c.GOP = 2 * c.FPS
	}
	if c.Bitrate == "" {
		c.Bitrate = "1500k"
	}
	if c.Codec == "" {
		c.Codec = "h264"
	}
	if c.FFmpeg == "" {
		c.FFmpeg = "ffmpeg"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// generate writes frames at the configured rate, each stamped with the
// moment it was made, until ctx ends or the encoder stops reading.
func generate(ctx context.Context, w io.Writer, cfg Config) int {
	ySize := cfg.Width * cfg.Height
	frame := make([]byte, ySize*3/2)
	for i := ySize; i < len(frame); i++ {
		frame[i] = 128 // neutral chroma: a grey picture
	}
	interval := time.Second / time.Duration(cfg.FPS)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	top := Rows(cfg.Width)
	for n := 0; ; n++ {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return n
		}
		// A moving ramp below the stamp gives x264 real motion to code.
		for y := top; y < cfg.Height; y++ {
			row := frame[y*cfg.Width : (y+1)*cfg.Width]
			for x := range row {
				row[x] = byte(x + y + 4*n)
			}
		}
		Stamp{Created: time.Now(), Seq: uint16(n)}.Draw(frame, cfg.Width)
		if _, err := w.Write(frame); err != nil {
			return n + 1
		}
		// Against the start, not the last write, so the rate never drifts.
		timer.Reset(time.Until(start.Add(time.Duration(n+1) * interval)))
	}
}

// dialWhenLive retries the WHEP offer until the path has a publisher: the
// generator's first IDR takes a moment to arrive. Until then the server
// answers 409 (draft-ietf-wish-whep-03; 404 from servers before it).
func dialWhenLive(ctx context.Context, cfg Config, p *pairer) (*whepclient.Session, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sess, err := whepclient.Dial(dctx, cfg.WHEPURL, whepclient.Options{
			Decode: true, NACK: true, H265: cfg.ViewerH265, OnAccessUnit: p.onAccessUnit,
			SettingEngine: cfg.SettingEngine, Logger: cfg.Logger,
		})
		if err == nil {
			err = sess.WaitConnected(dctx)
			if err != nil {
				sess.Close()
			}
		}
		cancel()
		if err == nil {
			return sess, nil
		}
		var he *whepclient.HTTPError
		if !errors.As(err, &he) || (he.StatusCode != http.StatusConflict && he.StatusCode != http.StatusNotFound) || time.Now().After(deadline) {
			return nil, fmt.Errorf("viewer: %w", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pairer hands pictures to the decoder and remembers when each arrived;
// the decoder returns them in the same order (no B-frames, one thread).
type pairer struct {
	started  bool // an IDR has been seen; only the read goroutine touches it
	arrivals chan time.Time
	pictures chan []byte
	h265     atomic.Int32 // the codec of the first picture: 0 none yet, 1 H.264, 2 H.265
}

func (p *pairer) codec() string {
	return [...]string{"none", "h264", "h265"}[p.h265.Load()]
}

// onAccessUnit runs on the session's read goroutine: it copies the picture
// as Annex-B and never waits, so RTP reading is not slowed.
func (p *pairer) onAccessUnit(au whepclient.AccessUnit) {
	if !p.started && !au.IDR {
		return
	}
	if !p.started {
		c := int32(1)
		if au.H265 {
			c = 2
		}
		p.h265.Store(c)
	}
	p.started = true
	var b []byte
	for _, n := range au.NALUs {
		b = append(b, 0, 0, 0, 1)
		b = append(b, n...)
	}
	// Never block: the decoder being hopelessly behind (or gone) must not
	// stall RTP reading. A picture skipped here shows up as out of step.
	select {
	case p.pictures <- b:
	default:
		return
	}
	select {
	case p.arrivals <- au.Received:
	default:
	}
}

// read pairs decoded pictures with arrival times until the decoder ends.
func (p *pairer) read(r io.Reader, cfg Config, from time.Time, res *Result) {
	buf := make([]byte, cfg.Width*cfg.Height)
	var offset uint16
	anchored := false
	for i := 0; ; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		res.Decoded++
		var arrived time.Time
		select {
		case arrived = <-p.arrivals:
		default:
			return // a picture the viewer never handed over: cannot pair
		}
		st, ok := Read(buf, cfg.Width)
		if !ok {
			res.Unreadable++
			continue
		}
		if !anchored || st.Seq-uint16(i) != offset {
			if anchored {
				res.OutOfStep++
			}
			offset, anchored = st.Seq-uint16(i), true
			continue // a re-anchored pairing is not trusted for this picture
		}
		if st.Created.After(from) {
			res.Samples = append(res.Samples, arrived.Sub(st.Created))
		}
	}
}

func (r *Result) summarise() {
	if len(r.Samples) == 0 {
		return
	}
	r.Median, r.P95 = Quantile(r.Samples, 0.5), Quantile(r.Samples, 0.95)
	r.Min, r.Max = Quantile(r.Samples, 0), Quantile(r.Samples, 1)
}
