package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
)

// soakConfig is what `whep-loadgen soak` runs: its own server, one
// publisher restarted on a schedule, and a pool of viewers that churns.
type soakConfig struct {
	server, clip, serverLog string
	duration, every         time.Duration
	viewers, churn          int
	churnEvery, restart     time.Duration
	limits                  soakLimits
}

func cmdSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c soakConfig
	var rssMiB float64
	fs.StringVar(&c.server, "server", "", "the srtwhep binary to run (required); it is started on loopback ports of its own")
	fs.StringVar(&c.clip, "clip", "", "MPEG-TS clip the publisher loops (default: a 640x360 30 fps H.264 clip made with ffmpeg)")
	fs.StringVar(&c.serverLog, "server-log", "", "file for the server's log (default: discarded unless the soak fails)")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long to run")
	fs.DurationVar(&c.every, "every", time.Minute, "sample interval: one line of RSS, goroutines, FDs and CPU each")
	fs.IntVar(&c.viewers, "viewers", 100, "WHEP viewers held")
	fs.IntVar(&c.churn, "churn", 10, "viewers closed and replaced every -churn-every")
	fs.DurationVar(&c.churnEvery, "churn-every", 10*time.Second, "viewer churn interval")
	fs.DurationVar(&c.restart, "restart-every", 2*time.Minute, "publisher restart interval; every second restart is a SIGKILL")
	// Why these limits: with the defaults a soak opens ~60 sessions and
	// one publisher every ~2 minutes. A leak of one goroutine or one FD
	// per session would add hundreds over any second half longer than 5
	// minutes; 16 MiB is about a tenth of the server's RSS at 100 viewers
	// and would be ~5 KiB per session over a 1 h run, while the Go heap's
	// own sawtooth between GC cycles is a few MiB.
	fs.Float64Var(&rssMiB, "max-rss-rise", 16, "largest fitted rise of anonymous RSS over the second half, MiB")
	fs.Float64Var(&c.limits.Goroutines, "max-goroutine-rise", 50, "largest fitted goroutine rise over the second half")
	fs.Float64Var(&c.limits.FDs, "max-fd-rise", 20, "largest fitted open-FD rise over the second half")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.limits.RSS = rssMiB * (1 << 20)
	if c.server == "" {
		fmt.Fprintln(stderr, "whep-loadgen soak: -server is required (the srtwhep binary, e.g. bin/srtwhep)")
		return 2
	}
	if c.every <= 0 || c.duration < 6*c.every {
		fmt.Fprintln(stderr, "whep-loadgen soak: -duration must be at least 6 × -every, so the second half has a trend")
		return 2
	}
	if err := runSoak(ctx, c, stdout); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen soak: %v\n", err)
		return 1
	}
	return 0
}

func runSoak(ctx context.Context, c soakConfig, out io.Writer) error {
	dir, err := os.MkdirTemp("", "srtwhep-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.clip == "" {
		c.clip = filepath.Join(dir, "clip.ts")
		if err := makeSoakClip(ctx, c.clip); err != nil {
			return err
		}
	}
	logW := io.Writer(io.Discard)
	if c.serverLog != "" {
		f, err := os.Create(c.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		logW = f
	}
	srv, err := startSoakServer(ctx, c.server, dir, logW)
	if err != nil {
		return err
	}
	defer srv.stop()
	proc, err := procfs.NewProc(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("server /proc: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	// The publisher restarts on its own goroutine so that a restart never
	// waits for a churn batch, and the other way round.
	var wg sync.WaitGroup
	// Cancel before waiting: on an early error return the publisher loop
	// would otherwise run until the deadline.
	defer func() {
		cancel()
		wg.Wait()
	}()
	pub := &soakPublisher{clip: c.clip, url: "srt://" + srv.addrs.SRT + "?streamid=publish:live/soak&pkt_size=1316"}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pub.run(ctx, c.restart)
	}()

	pool, err := loadgen.NewPool(loadgen.Config{
		URL:            "http://" + srv.addrs.HTTP + "/live/soak/whep",
		ConnectTimeout: 10 * time.Second,
		// One decoding session in fifty keeps the generator's own CPU far
		// below the server's on a machine with two cores.
		DecodeEvery: 50,
		NACK:        true,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	defer pool.Close()
	metricsURL := "http://" + srv.addrs.Metrics + "/metrics"
	httpc := &http.Client{Timeout: 5 * time.Second}

	fmt.Fprintf(out, "soak: %s, %d viewers, churn %d every %s, publisher restart every %s, server pid %d\n",
		c.duration, c.viewers, c.churn, c.churnEvery, c.restart, srv.cmd.Process.Pid)
	writeSoakHeader(out)
	start := time.Now()
	var (
		samples         []soakSample
		opened, failed  int
		lastCPU         = procCPU(proc)
		lastAt          = start
		churnT, sampleT = time.NewTicker(c.churnEvery), time.NewTicker(c.every)
	)
	defer churnT.Stop()
	defer sampleT.Stop()
	grow := func() {
		a, f := pool.Grow(ctx, c.viewers, 20)
		opened, failed = opened+a, failed+f
	}
	var due time.Time // when a sample became due; zero when none is
	// A sample waits for the pool to be whole again, up to half an
	// interval: one taken inside a publisher gap (no viewers, no
	// sessions on the server) would be an outlier in the trend.
	takeSample := func(now time.Time) error {
		if done, err := srv.exited(); done {
			return fmt.Errorf("server exited during the soak: %v", err)
		}
		alive := 0
		for _, v := range pool.Sessions() {
			if v.Alive() {
				alive++
			}
		}
		if alive < c.viewers && now.Sub(due) < c.every/2 {
			return nil
		}
		s, err := sampleServer(ctx, proc, httpc, metricsURL)
		if err != nil {
			return err
		}
		cpu := procCPU(proc)
		s.CPU = loadgen.CPUPercent(cpu-lastCPU, now.Sub(lastAt))
		lastCPU, lastAt = cpu, now
		s.At, s.Opened, s.Failed, s.Restarts, s.Viewers = now.Sub(start), opened, failed, pub.restarts(), alive
		samples = append(samples, s)
		writeSoakLine(out, s)
		due = time.Time{}
		return nil
	}
	grow()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-churnT.C:
			ss := pool.Sessions()
			for _, i := range rand.Perm(len(ss))[:min(c.churn, len(ss))] {
				_ = ss[i].Close()
			}
			grow()
		case now := <-sampleT.C:
			due = now
		}
		if !due.IsZero() && ctx.Err() == nil {
			if err := takeSample(time.Now()); err != nil {
				return err
			}
		}
	}
	if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	trends, err := soakTrends(samples, c.limits)
	if err != nil {
		return err
	}
	var rising []string
	for _, t := range trends {
		fmt.Fprintln(out, t)
		if t.Failed() {
			rising = append(rising, t.Name)
		}
	}
	if len(rising) > 0 {
		return fmt.Errorf("upward trend in %s", strings.Join(rising, ", "))
	}
	fmt.Fprintln(out, "soak: PASS")
	return nil
}

func procCPU(p procfs.Proc) time.Duration {
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

func sampleServer(ctx context.Context, p procfs.Proc, c *http.Client, metricsURL string) (soakSample, error) {
	var s soakSample
	st, err := p.Stat()
	if err != nil {
		return s, fmt.Errorf("server /proc/%d/stat: %w", p.PID, err)
	}
	s.RSS = uint64(st.ResidentMemory())
	ps, err := p.NewStatus()
	if err != nil {
		return s, fmt.Errorf("server /proc/%d/status: %w", p.PID, err)
	}
	s.Anon = ps.RssAnon
	if s.FDs, err = p.FileDescriptorsLen(); err != nil {
		return s, fmt.Errorf("server /proc/%d/fd: %w", p.PID, err)
	}
	// The Go runtime's own count, through the server's metrics: /proc
	// only knows threads.
	s.Goroutines = -1
	if m, err := ladder.Scrape(ctx, c, metricsURL, "go_goroutines"); err == nil && m["go_goroutines"].Found {
		s.Goroutines = m["go_goroutines"].Sum
	}
	return s, nil
}
