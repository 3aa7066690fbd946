package whep

import (
	"log/slog"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
)

// Source hands out readers of a path's access units. cmd adapts *hub.Hub to
// it. Errors are the hub's sentinels (wrapped or not): hub.ErrNoPublisher
// (also for an unknown path) → 409 + Retry-After, hub.ErrPathFull /
// hub.ErrServerFull → 503.
type Source interface {
	AddReader(path, session string) (Reader, error)
	// AddTranscodedReader reads the path's video transcoded to H.264
	// (hub.Hub.AddPendingTranscodedReader), for a viewer that cannot take
	// the original; hub.ErrNoPublisher when the path makes no such
	// rendition.
	AddTranscodedReader(path, session string) (Reader, error)
}

// SourceFuncs is a Source made of functions that return a concrete
// reader type R (cmd/srtwhep passes the hub's AddPendingReader and
// AddPendingTranscodedReader).
type SourceFuncs[R Reader] struct {
	Add, AddTranscoded func(path, session string) (R, error)
}

func (f SourceFuncs[R]) AddReader(path, session string) (Reader, error) {
	return asReader(f.Add(path, session))
}

func (f SourceFuncs[R]) AddTranscodedReader(path, session string) (Reader, error) {
	return asReader(f.AddTranscoded(path, session))
}

// asReader never puts a typed nil inside the interface.
func asReader[R Reader](r R, err error) (Reader, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Reader is one viewer's reservation on a path. It queues nothing until
// Attach or AttachAV, so a viewer still in ICE costs no queue, and takes
// no seat under the reader caps until Claim. From then
// on the session's sender reads it (rtpsend.Source: the frames, video or
// audio, in the order the publisher wrote them, marked CatchUp when part
// of the catch-up burst a new viewer starts from). Close releases the
// reservation and is called exactly once. *hub.Reader implements it.
type Reader interface {
	// HasAudio reports whether the path had audio when the reader was
	// added; the session offers audio only then.
	HasAudio() bool
	// Info is what the path publishes, as far as known: the answer's
	// video codec follows it (sdpoffer.Offer.ForStream).
	Info() av.StreamInfo
	Attach()   // video only
	AttachAV() // video and audio
	// Claim takes the reader's seat under the path's and the server's
	// reader caps, when its viewer starts ICE (claimReader); until then
	// the reader counts against no cap. hub.ErrPathFull or
	// hub.ErrServerFull when a cap was reached meanwhile.
	Claim() error
	// Dropped counts the access units discarded for a slow viewer.
	Dropped() uint64
	Close()
	rtpsend.Source
}

// Viewer is a session as Config.SenderSource is told of it, when the
// session is made (its 201 is on its way).
type Viewer struct {
	Path, ID string
	// Reader is the session's reservation on its path, which the session
	// attaches once its viewer is connected and closes when it ends.
	Reader Reader
	// VideoMedia is the index of the video m-line in the viewer's offer;
	// an ICE restart replaces the offer, never its m-lines.
	VideoMedia int
	Log        *slog.Logger
}

// SenderSource is what a session's sender reads in place of its reader
// (Config.SenderSource).
type SenderSource interface {
	rtpsend.Source
	// SenderStarted hands it the session's sender once the viewer is
	// connected: the sender's bandwidth estimate and probes are what
	// its choices follow.
	SenderStarted(snd *rtpsend.Sender)
	// Close is called once, when the session ends, after its reader's
	// Close; it closes whatever the source opened besides the reader.
	Close()
}
