package whep

import "github.com/srtwhep/srtwhep/pkg/events"

// readerOpened tells the control plane that sess watches its path. It is
// called once the viewer is attached, so a viewer that never connects
// (ICE failure, handshake timeout) produces no event at all.
func (s *Server) readerOpened(sess *session) {
	sess.opened = true
	s.cfg.Events.Emit(events.Event{Kind: events.ReaderOpened, Path: sess.path, Protocol: "webrtc",
		ID: sess.id, Remote: sess.remote})
}

// readerClosed pairs every reader.opened with its end and why.
func (s *Server) readerClosed(sess *session, reason error) {
	if !sess.opened {
		return
	}
	s.cfg.Events.Emit(events.Event{Kind: events.ReaderClosed, Path: sess.path, Protocol: "webrtc",
		ID: sess.id, Remote: sess.remote, Reason: reason.Error()})
}
