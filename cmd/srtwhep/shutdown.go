package main

// How the server stops: its viewers are moved before anything closes.

import (
	"context"
	"time"
)

// RunUntil is Run for a process: when stop ends (SIGTERM), the viewers are
// first told to reconnect elsewhere and given http.drainTimeout to move
// (drain), and only then is everything stopped, so a rolling update moves
// viewers without a black screen.
func (s *server) RunUntil(stop context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-stop.Done():
			s.drain(ctx)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := s.Run(ctx)
	cancel()
	<-drained
	return err
}

// drain sends reconnect to every viewer and waits for them to leave, at
// most http.drainTimeout.
func (s *server) drain(ctx context.Context) {
	wait := time.Duration(s.cfg.HTTP.DrainTimeout)
	if wait <= 0 {
		return
	}
	paths, sessions := s.whep.Drain()
	s.events.Drain(ctx, paths, wait)
	s.log.Info("drained", "sessions", sessions, "left", s.whep.Stats().Sessions)
}
