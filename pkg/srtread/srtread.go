// Package srtread serves published paths to SRT readers (streamid
// read:PATH or #!::r=PATH,m=request): ffplay, VLC, OBS's media source or
// another srtwhep pulling the path. Each reader gets the path as MPEG-TS in
// 1316-byte SRT messages: the H.264 access units as they came, starting at
// the cached GOP's IDR, and the publisher's audio as it came (AAC, MPEG
// audio, Opus), not the Opus the WebRTC viewers get. A reader counts
// against the same limits as a WHEP viewer (hub.AddReader), and a reader
// too slow for the stream loses video up to the next IDR like one.
//
// The decisions that can refuse a reader precisely (access rules, no
// publisher, limits) are taken during the SRT handshake by Admit, whose
// error becomes the reject reason the caller sees; the slow ones (the auth
// hook, an on-demand source) afterwards in Serve, on the reader's own
// goroutine, where a refusal can only close the connection.
package srtread

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// Authorizer is the access policy as SRT readers meet it; *auth.Policy
// implements it. Its refusals are *auth.Denied, which pkg/srt turns into
// reject reasons.
type Authorizer interface {
	// CheckSRTViewer applies the local rules; it runs in the handshake and
	// must not block.
	CheckSRTViewer(auth.Viewer) error
	// AskHookSRTViewer asks the external hook; it may take its timeout.
	AskHookSRTViewer(context.Context, auth.Viewer) error
}

// Config configures a Server. Hub is required.
type Config struct {
	Hub *hub.Hub
	// Authorizer decides who may read (nil: everyone may).
	Authorizer Authorizer
	// Demand, when set, is called before a reader is added and may block
	// until an on-demand source of the path is up (an edge pull); an
	// error refuses the reader. A path without a publisher is then not
	// refused during the handshake when Pullable says Demand can bring it
	// up (nil Pullable: any path may be).
	Demand   func(ctx context.Context, path string) error
	Pullable func(path string) bool
	// Events receives ReaderOpened and ReaderClosed (protocol "srt").
	Events events.Func
	Logger *slog.Logger
}

// Server runs the SRT readers: Admit is srt.Config.AdmitRead and Serve is
// srt.Config.ServeRead. It starts no goroutine of its own; each reader
// runs on the one the SRT server gives it.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session

	opened   atomic.Uint64
	refused  atomic.Uint64
	closedTx atomic.Uint64 // bytes sent to readers that have left
}

// New checks cfg; it starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Hub == nil {
		return nil, errors.New("srtread: Config.Hub is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, log: log.With("component", "srtread"), sessions: map[string]*session{}}, nil
}

// Admit is srt.Config.AdmitRead: the access rules and what the hub would
// answer now, on libsrt's handshake thread. The hub is asked under its
// read lock, which is only ever held for bookkeeping, never across I/O.
func (s *Server) Admit(req srt.Request) error {
	id := req.StreamID
	if s.cfg.Authorizer != nil {
		if err := s.cfg.Authorizer.CheckSRTViewer(auth.Viewer{Path: id.Path, Remote: req.Remote, Token: id.Pass}); err != nil {
			return err
		}
	}
	err := s.cfg.Hub.CanRead(id.Path)
	if errors.Is(err, hub.ErrNoPublisher) && s.cfg.Demand != nil && (s.cfg.Pullable == nil || s.cfg.Pullable(id.Path)) {
		return nil
	}
	return err
}

// Serve is srt.Config.ServeRead: it runs one reader until it leaves, the
// path ends or the server stops.
func (s *Server) Serve(ctx context.Context, c *srt.Conn) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	path := c.Path()
	sess := &session{cancel: cancel, id: newSessionID(), path: path, remote: c.Remote(), since: time.Now(), conn: c}
	log := s.log.With("path", path, "session", sess.id, "remote", c.Remote(), "protocol", "srt")
	viewer := auth.Viewer{Path: path, Remote: c.Remote(), Token: c.StreamID().Pass}
	refuse := func(err error) {
		s.refused.Add(1)
		log.Warn("reader refused", "err", err)
	}
	if s.cfg.Authorizer != nil {
		if err := s.cfg.Authorizer.AskHookSRTViewer(ctx, viewer); err != nil {
			refuse(err)
			return
		}
	}
	if s.cfg.Demand != nil {
		if err := s.cfg.Demand(ctx, path); err != nil {
			refuse(err)
			return
		}
	}
	r, err := s.cfg.Hub.AddReader(path, sess.id)
	if err != nil {
		refuse(err)
		return
	}
	defer r.Close()
	sess.reader = r
	r.AttachSource()
	s.add(sess)
	s.opened.Add(1)
	log.Info("reader opened")
	s.cfg.Events.Emit(events.Event{Kind: events.ReaderOpened, Path: path, Protocol: "srt", ID: sess.id, Remote: sess.remote})

	reason := sess.run(ctx, log)

	s.remove(sess)
	log.Info("reader closed", "reason", reason, "duration", time.Since(sess.since).Round(time.Millisecond).String(),
		"bytes", sess.bytes.Load(), "dropped", r.Dropped(), "publisher_changes", sess.changes.Load())
	s.cfg.Events.Emit(events.Event{Kind: events.ReaderClosed, Path: path, Protocol: "srt", ID: sess.id, Remote: sess.remote, Reason: reason})
}

func (s *Server) add(sess *session) {
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
}

// remove takes sess out and keeps its bytes in one step, so the total
// Stats reports never goes back.
func (s *Server) remove(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.closedTx.Add(sess.bytes.Load())
	s.mu.Unlock()
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
