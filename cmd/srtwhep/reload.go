package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// watchConfig reloads on SIGHUP and, within about a second, when the config
// file's content changes, until ctx ends.
func (s *server) watchConfig(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var changed <-chan struct{}
	if s.cfg.File() != "" {
		changed = config.Watch(ctx, s.cfg.File(), time.Second)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			s.reload("SIGHUP")
		case <-changed:
			s.reload("file changed")
		}
	}
}

// reload loads the file again; an invalid file changes nothing, and keys
// that need a restart keep their running values (config.Reloaded).
func (s *server) reload(trigger string) {
	next, err := config.Load(s.cfg.File())
	if err != nil {
		s.log.Error("config reload refused; still running on the previous config", "trigger", trigger, "err", err)
		return
	}
	cur := s.config()
	ch := config.Diff(cur, next)
	if len(ch.Restart) > 0 {
		s.log.Warn("restart needed for: "+strings.Join(ch.Restart, ", "), "trigger", trigger,
			"hint", "these keys keep their running values until srtwhep restarts")
	}
	s.apply(config.Reloaded(cur, next))
	changed := strings.Join(ch.Live, ", ")
	if changed == "" {
		changed = "nothing"
	}
	s.log.Info("config reloaded", "trigger", trigger, "changed", changed)
}

// apply makes next live for the next publisher, viewer and API request.
func (s *server) apply(next *config.Config) {
	s.policy.SetRules(accessRules(next))
	s.conf.Store(next)
}
