package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/pkg/ladder"
	"github.com/srtwhep/srtwhep/pkg/loadgen"
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

// makeSoakClip encodes a small clip once: the publisher then loops it with
// -c copy and costs almost nothing, leaving the CPU to the server.
func makeSoakClip(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=10",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "800k",
		"-g", "60", "-bf", "0", "-f", "mpegts", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg (apt-get install -y ffmpeg) making the clip: %v\n%s", err, out)
	}
	return nil
}

// soakServer is the srtwhep process under test.
type soakServer struct {
	cmd   *exec.Cmd
	addrs struct{ SRT, HTTP, Metrics string }
	done  chan struct{}
	err   error
}

func startSoakServer(ctx context.Context, bin, dir string, log io.Writer) (*soakServer, error) {
	cfg := filepath.Join(dir, "srtwhep.yml")
	// Metrics are on for go_goroutines; the automatic viewer limit is off
	// because the machine is shared and its CPU readings would refuse
	// viewers the soak needs.
	yml := `logLevel: warn
srt:
  listen: "127.0.0.1:0"
http:
  listen: "127.0.0.1:0"
webrtc:
  listenIP: 127.0.0.1
  udpPort: 0
  tcpPort: 0
metrics:
  listen: "127.0.0.1:0"
readers:
  maxCPUPercent: 0
`
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		return nil, err
	}
	ready := filepath.Join(dir, "ready.json")
	s := &soakServer{cmd: exec.Command(bin, "-config", cfg, "-ready-file", ready), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SRTWHEP_") { // the server refuses unknown ones
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if err == nil && json.Unmarshal(b, &s.addrs) == nil && s.addrs.HTTP != "" {
			return s, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.stop()
			return nil, err
		}
		select {
		case <-tick.C:
		case <-s.done:
			return nil, fmt.Errorf("srtwhep exited before it was ready: %v", s.err)
		case <-deadline:
			s.stop()
			return nil, errors.New("srtwhep wrote no ready file within 15 s")
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
	}
}

func (s *soakServer) exited() (bool, error) {
	select {
	case <-s.done:
		return true, s.err
	default:
		return false, nil
	}
}

// stop ends the server as systemd would, killing it if it hangs.
func (s *soakServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// soakPublisher is ffmpeg looping the clip over SRT, restarted on a
// schedule: gracefully, then killed, alternately, since a crashed encoder
// leaves the server to notice by timeout and a stopped one says goodbye.
type soakPublisher struct {
	clip, url string
	mu        sync.Mutex
	n         int
}

func (p *soakPublisher) restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *soakPublisher) run(ctx context.Context, every time.Duration) {
	for i := 0; ctx.Err() == nil; i++ {
		cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin",
			"-re", "-stream_loop", "-1", "-i", p.clip, "-c", "copy", "-f", "mpegts", p.url)
		if err := cmd.Start(); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-done: // ffmpeg gave up (server busy, say): start again below
		}
		t.Stop()
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
		// A short gap, as an encoder's reconnect has.
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
