// Command srtwhep is a standalone SRT→WHEP media server: publishers push
// H.264 in MPEG-TS over SRT, viewers watch over WebRTC (WHEP) in a browser.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/version"
	"github.com/srtwhep/srtwhep/pkg/web"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("srtwhep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML config file (default: the embedded defaults, see configs/srtwhep.yml)")
	check := fs.Bool("check", false, "validate the config, print the effective config and exit")
	probe := fs.String("probe", "", "GET this URL and exit 0 on a 2xx answer (container health checks without curl; https to loopback is not verified)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	readyFile := fs.String("ready-file", "", "once every listener is bound, write their addresses to this file as JSON (for supervisors and tests using port 0)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *showVersion:
		fmt.Fprintf(stdout, "srtwhep %s\n", version.String())
		return 0
	case *probe != "":
		if err := web.Probe(*probe); err != nil {
			fmt.Fprintf(stderr, "probe: %v\n", err)
			return 1
		}
		return 0
	}
	cfg, err := config.Load(*configFile)
	if err != nil {
		fmt.Fprintf(stderr, "srtwhep: %v\n", err)
		return 1
	}
	if *check {
		out, err := cfg.Dump()
		if err != nil {
			fmt.Fprintf(stderr, "srtwhep: %v\n", err)
			return 1
		}
		name := *configFile
		if name == "" {
			name = "embedded defaults"
		}
		fmt.Fprintf(stdout, "# %s: OK\n%s", name, out)
		return 0
	}

	log := cfg.NewLogger(stderr)
	srt.Init()
	defer srt.Cleanup()
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, err := newServer(cfg, log)
	if err != nil {
		log.Error("start-up refused", "err", err)
		return 1
	}
	s.readyFile = *readyFile
	if err := s.RunUntil(sig); err != nil {
		log.Error("server stopped", "err", err)
		return 1
	}
	log.Info("shut down cleanly", "version", version.String())
	return 0
}
