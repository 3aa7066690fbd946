// Command whep-loadgen opens many WHEP sessions against a server and checks
// that each really receives the stream (run), or steps through
// concurrencies while measuring the server's CPU and memory to find its
// capacity (ladder), or writes a ladder's plot data from its JSON
// (plotdata; tools/ladderplot draws it). Most
// sessions count SRTP packets from their clear RTP headers without
// decrypting them, so the generator stays far cheaper than the server it
// measures; a sample decodes fully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  whep-loadgen run    -url URL -n N [-mode browser|none|gro] [-ramp 20/s] [-hold 30s] [-decode-every 10] [-audio]
  whep-loadgen ladder -url URL -pid SERVERPID [-mode browser|none|gro] [-steps 10,20,40,80,160] [-hold 20s] [-audio]
                      [-metrics http://127.0.0.1:9998/metrics] [-profile-at 400] [-label base] [-out DIR]
  whep-loadgen plotdata -in DIR/ladder.json -out ladder-plot.json
  whep-loadgen compare -video DIR/ladder.json -audio DIR/ladder.json
  whep-loadgen headline DIR/ladder.json...
  whep-loadgen soak   -server bin/srtwhep [-duration 10m] [-viewers 100] [-churn 10]
                      [-restart-every 2m]
  whep-loadgen g2g    -srt SRTURL -url URL [-duration 20s] [-metrics URL]
Run "whep-loadgen COMMAND -h" for every flag.
`

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "ladder":
		return cmdLadder(ctx, args[1:], stdout, stderr)
	case "plotdata":
		return cmdPlotData(args[1:], stderr)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "headline":
		return cmdHeadline(args[1:], stdout, stderr)
	case "soak":
		return cmdSoak(ctx, args[1:], stdout, stderr)
	case "g2g":
		return cmdG2G(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "whep-loadgen: unknown command %q\n%s", args[0], usage)
	return 2
}

// common are the flags both commands share.
type common struct {
	url, token, ramp string
	decodeEvery      int
	maxDecode        int
	fps, maxLoss     float64
	connectTimeout   time.Duration
	pace             time.Duration
	verbose          bool
	audio            bool
	mode             string
	rcvbuf           int
	audioPPS         float64
	cpuProfile       string
	pin              string
	pinEvery         int
	rate             float64
	criteria         loadgen.Criteria
	poolCfg          loadgen.Config
	stderr           io.Writer
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "WHEP endpoint, e.g. http://127.0.0.1:8889/live/cam1/whep (required)")
	fs.StringVar(&c.pin, "pin", "", `a layer selection (JSON, e.g. {"maxHeight":360}) that every -pin-every-th session POSTs to its layer Link once connected, as a player's quality menu does; "" pins none`)
	fs.IntVar(&c.pinEvery, "pin-every", 2, "with -pin, every k-th session pins (2: half of them)")
	fs.StringVar(&c.token, "token", "", "bearer token sent with each offer")
	fs.StringVar(&c.ramp, "ramp", "20/s", "how fast new sessions are opened, sessions per second")
	fs.IntVar(&c.decodeEvery, "decode-every", 10, "every k-th session decodes fully through pion (the first always does); the rest check RTP headers only")
	fs.IntVar(&c.maxDecode, "max-decode", 0, "at most this many decode sessions (0: no cap, -1: none); keeps the generator's cost per viewer low in big ladders")
	fs.Float64Var(&c.fps, "fps", 30, "frame rate of the published stream; a viewer is verified at ≥ 90% of it")
	fs.Float64Var(&c.maxLoss, "max-loss", 0.001, "largest lost/expected packet ratio a verified viewer may have")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 15*time.Second, "limit for one session's offer, ICE and DTLS")
	fs.DurationVar(&c.pace, "pace", loadgen.DefaultPace, "sleep between receive rounds (batches packets per system call); 0 reads as soon as packets arrive")
	fs.BoolVar(&c.audio, "audio", false, "offer Opus audio too; a viewer is then verified only if it also gets the audio at ≥ 90% of -audio-pps")
	fs.Float64Var(&c.audioPPS, "audio-pps", 50, "Opus packets per second the server sends (50 for 20 ms frames)")
	fs.StringVar(&c.mode, "mode", string(loadgen.ModeBrowser), "how viewers receive and answer: browser (as browsers: an RTCP receiver report a second, NACKs for missing packets, NACK and PLI offered, plain UDP receive; headline figures), none (browser without RTCP) or gro (no RTCP, UDP_GRO receive: on loopback it spares the server segmenting its GSO sends, so never a headline)")
	fs.IntVar(&c.rcvbuf, "rcvbuf", 0, "receive buffer of each viewer socket in bytes (0: 2 MiB); a few KiB make viewers whose link loses most of every frame")
	fs.BoolVar(&c.verbose, "v", false, "log session warnings to stderr")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the generator's own CPU profile to this file (go tool pprof)")
}

// profile starts the CPU profile when asked; the returned func stops it.
func (c *common) profile() (func(), error) {
	if c.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(c.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func (c *common) finish() error {
	if c.url == "" {
		return errors.New("-url is required (the WHEP endpoint, http://HOST:8889/PATH/whep)")
	}
	r, err := strconv.ParseFloat(strings.TrimSuffix(c.ramp, "/s"), 64)
	if err != nil || r <= 0 {
		return fmt.Errorf("-ramp %q: want sessions per second such as 20/s", c.ramp)
	}
	c.rate = r
	mode, err := loadgen.ParseViewerMode(c.mode)
	if err != nil {
		return fmt.Errorf("-mode: %w", err)
	}
	if c.rcvbuf < 0 {
		return fmt.Errorf("-rcvbuf %d: want bytes, or 0 for the default", c.rcvbuf)
	}
	level := slog.LevelError
	if c.verbose {
		level = slog.LevelWarn
	}
	c.criteria = loadgen.Criteria{FPS: c.fps, MaxLoss: c.maxLoss, Audio: c.audio, AudioPPS: c.audioPPS}
	c.poolCfg = loadgen.Config{
		URL:            c.url,
		BearerToken:    c.token,
		DecodeEvery:    max(c.decodeEvery, 1),
		MaxDecode:      c.maxDecode,
		ConnectTimeout: c.connectTimeout,
		Pace:           paceOrNone(c.pace),
		Audio:          c.audio,
		SocketBuffer:   c.rcvbuf,
		Pin:            c.pin,
		PinEvery:       max(c.pinEvery, 1),
		Logger:         slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level})),
	}
	c.poolCfg.ApplyMode(mode)
	return nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := common{stderr: stderr}
	c.register(fs)
	n := fs.Int("n", 10, "number of sessions")
	hold := fs.Duration("hold", 30*time.Second, "how long all sessions are held and measured")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := c.finish(); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen run: %v\n", err)
		return 2
	}
	stopProfile, err := c.profile()
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen run: %v\n", err)
		return 2
	}
	rep, err := loadgen.Run(ctx, loadgen.RunConfig{Pool: c.poolCfg, Criteria: c.criteria, N: *n, Rate: c.rate, Hold: *hold})
	stopProfile()
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen run: %v\n", err)
		return 1
	}
	if err := rep.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen run: %v\n", err)
		return 1
	}
	if rep.Verified < rep.N {
		return 1
	}
	return 0
}

func cmdLadder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen ladder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := common{stderr: stderr}
	c.register(fs)
	pid := fs.Int("pid", 0, "PID of the server process, whose CPU and RSS are read from /proc (required)")
	stepsFlag := fs.String("steps", "10,20,40,80,160", "concurrencies to step through, ascending")
	hold := fs.Duration("hold", 20*time.Second, "measured time per step")
	settle := fs.Duration("settle", 2*time.Second, "wait after every new session receives media, before measuring")
	metrics := fs.String("metrics", "", "the server's Prometheus URL (e.g. http://127.0.0.1:9998/metrics) for dropped frames and SRT RTT")
	out := fs.String("out", "", "directory for ladder.md, ladder.json and "+ladder.PlotFile+" (and the CPU profile)")
	label := fs.String("label", "", "names the server setup measured (e.g. base or this: which binary, as make bench BASE=REV labels them) in the report, for whep-loadgen headline")
	profileAt := fs.Int("profile-at", 400, "after the hold of the step with this N, take a CPU profile of the server from the pprof handler next to -metrics (srtwhep: metrics.pprof: true) and report its top 15; 0 turns it off")
	profileFor := fs.Duration("profile-for", 10*time.Second, "length of that CPU profile")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := c.finish(); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
		return 2
	}
	steps, err := parseSteps(*stepsFlag)
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
		return 2
	}
	if *pid <= 0 {
		fmt.Fprintln(stderr, "whep-loadgen ladder: -pid is required (the server's process id, e.g. $(pidof srtwhep))")
		return 2
	}
	stopProfile, err := c.profile()
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
		return 2
	}
	rep, err := ladder.Run(ctx, ladder.Config{
		Pool: c.poolCfg, Criteria: c.criteria, Steps: steps, Rate: c.rate, Hold: *hold, Settle: *settle,
		ServerPID: *pid, Metrics: *metrics, Progress: stderr,
		Label: *label, ProfileAt: *profileAt, ProfileFor: *profileFor, ProfileDir: *out,
	})
	stopProfile()
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
		return 1
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
		return 1
	}
	if *out != "" {
		if err := rep.WriteFiles(*out); err != nil {
			fmt.Fprintf(stderr, "whep-loadgen ladder: %v\n", err)
			return 1
		}
	}
	return 0
}

// cmdPlotData writes a plot's data from a ladder's JSON, its summary
// computed again from the steps (so a ladder.json written by hand plots
// too); tools/ladderplot draws it. The drawing is not done here so that
// this module carries no plotting library.
func cmdPlotData(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen plotdata", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "a ladder.json written by \"whep-loadgen ladder -out DIR\" (required)")
	out := fs.String("out", "", "the "+ladder.PlotFile+" to write, for tools/ladderplot (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || *out == "" {
		fmt.Fprintln(stderr, "whep-loadgen plotdata: -in and -out are required, e.g. -in bench/results/STAMP/ladder.json -out /tmp/"+ladder.PlotFile)
		return 2
	}
	rep, err := ladder.ReadReport(*in)
	if err == nil {
		err = rep.WritePlotData(*out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen plotdata: %v\n", err)
		return 1
	}
	return 0
}

// cmdCompare sets a video-only ladder against one with audio, from their
// JSON, so make bench can state audio's marginal cost per viewer.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	video := fs.String("video", "", "ladder.json of a video-only ladder (required)")
	audio := fs.String("audio", "", "ladder.json of a ladder run with -audio against the same server (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *video == "" || *audio == "" {
		fmt.Fprintln(stderr, "whep-loadgen compare: -video and -audio are required, e.g. -video bench/results/STAMP/video/ladder.json -audio bench/results/STAMP/audio/ladder.json")
		return 2
	}
	v, err := ladder.ReadReport(*video)
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen compare: %v\n", err)
		return 1
	}
	a, err := ladder.ReadReport(*audio)
	if err != nil {
		fmt.Fprintf(stderr, "whep-loadgen compare: %v\n", err)
		return 1
	}
	if v.Audio || !a.Audio {
		fmt.Fprintf(stderr, "whep-loadgen compare: %s must be a ladder without -audio and %s one with it\n", *video, *audio)
		return 2
	}
	if err := ladder.CompareAudio(v, a).WriteMarkdown(stdout); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen compare: %v\n", err)
		return 1
	}
	return 0
}

// cmdHeadline sets several ladders side by side (server setups, viewer
// modes, repeated runs) with the median of each figure, as make bench
// prints its headline.
func cmdHeadline(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whep-loadgen headline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "whep-loadgen headline: name one or more ladder.json files, e.g. bench/results/STAMP/*/*/ladder.json")
		return 2
	}
	var reps []*ladder.Report
	for _, name := range fs.Args() {
		r, err := ladder.ReadReport(name)
		if err != nil {
			fmt.Fprintf(stderr, "whep-loadgen headline: %v\n", err)
			return 1
		}
		reps = append(reps, r)
	}
	if err := ladder.WriteHeadlines(stdout, ladder.Headlines(reps)); err != nil {
		fmt.Fprintf(stderr, "whep-loadgen headline: %v\n", err)
		return 1
	}
	return 0
}

func parseSteps(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-steps %q: want positive integers separated by commas", s)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-steps %q: steps must ascend", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// paceOrNone maps the flag's 0 ("no pause") to the Config's "none", since
// a zero Config.Pace selects the default.
func paceOrNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
