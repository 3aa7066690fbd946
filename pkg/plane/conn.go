package plane

import (
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// Output is where a viewer's sender writes (pkg/rtpsend).
type Output interface {
	// WriteVideo sends one frame's packets (or NACKed ones) and returns
	// how many went out; an error means the connection is going away.
	WriteVideo(pkts []rtp.Packet) (int, error)
	WriteAudio(pkt *rtp.Packet) error
	WriteRTCP(pkts []rtcp.Packet) error
}

// Conn is one viewer's WebRTC connection, as a plane's Answer made it.
type Conn interface {
	Output
	// Connected is closed once media may flow.
	Connected() <-chan struct{}
	// ICEStarted reports whether the viewer has sent a valid ICE check.
	ICEStarted() bool
	// State names the connection's state for the API and metrics: "new",
	// "connecting", "connected", "failed" or "closed".
	State() string
	// SSRCs are the SSRCs the answer announced; audio is 0 without audio.
	SSRCs() (video, audio uint32)
	// Trickle takes candidates the viewer sent; an error is the viewer's
	// fault.
	Trickle(candidates []string) error
	// RestartICE starts a new ICE generation for the viewer's new
	// credentials and candidates in remote and returns ours. An
	// *sdpoffer.Error is the viewer's fault; any other error leaves the
	// connection unusable.
	RestartICE(remote ICE) (ICE, error)
	// Drive runs s, the viewer's sender, until its Step reports done: on
	// the plane's shared workers where writes never block (UDP), else on
	// a goroutine of the connection's (see Run). It does not wait.
	Drive(s Stepper)
	// Close ends the connection, with an RTCP BYE and DTLS close_notify
	// to a connected viewer, and returns once nothing of it calls into
	// the caller any more and the sender Drive ran is no longer stepped.
	Close()
}

// Stepper is a viewer's sender in its one execution model: stepped,
// never blocking on anything but its Output.
type Stepper interface {
	// SetWake gives the sender the function that asks for another Step.
	// The sender calls it, from any goroutine and never blocking, when it
	// has work: a frame queued, a NACK, its end.
	SetWake(wake func())
	// Step writes what may go out now without waiting. done reports that
	// the sender has finished for good; otherwise at is when it wants to
	// be stepped again without a wake: zero for never, a time not after
	// now for at once. now is the driver's clock reading for this step:
	// a pool reads it once for a whole batch of viewers, not several times
	// per frame, so a step never reads the clock itself.
	Step(now time.Time) (at time.Time, done bool)
}

// Run steps s on the calling goroutine until it is done, waiting for its
// wakes and the times it asks for in between: the adapter for outputs
// whose writes block (ICE-TCP), which must not hold anyone else's.
func Run(s Stepper) {
	wake := make(chan struct{}, 1)
	s.SetWake(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		now := time.Now()
		at, done := s.Step(now)
		switch {
		case done:
			return
		case at.IsZero():
			<-wake
		default:
			d := at.Sub(now)
			if d <= 0 {
				continue
			}
			t.Reset(d)
			select {
			case <-wake:
				t.Stop()
			case <-t.C:
			}
		}
	}
}
