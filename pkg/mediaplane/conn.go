package mediaplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/pion/ice/v4"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// conn is a Viewer as a plane.Conn.
type conn struct {
	plane *Plane
	v     *Viewer
	one   [1]rtp.Packet // audio goes out a packet at a time
	// batch is the Sender of the pool worker stepping the viewer's
	// sender, set for the step's duration: writes queue into it and leave
	// with the worker's batch. Without one, a write takes a pooled Sender
	// and sends at once.
	batch *Sender
	// unwatch stops the watch on the session's end (see watch).
	unwatch func() bool
	// blocking is the goroutine of a sender whose writes block (ICE-TCP).
	blocking sync.WaitGroup
}

// Drive has the pool step s while the viewer is on UDP, whose writes never
// block; over ICE-TCP (from the start, or after an ICE restart moved it)
// s runs on a goroutine of its own.
func (c *conn) Drive(s plane.Stepper) {
	if c.v.OverTCP() {
		c.runBlocking(s)
		return
	}
	c.plane.pool.add(c, s)
}

func (c *conn) runBlocking(s plane.Stepper) {
	c.blocking.Go(func() {
		defer panics.Catch(c.v.log(), panics.ViewerSender, c.failed)
		plane.Run(s)
	})
}

// failed ends the viewer whose sender panicked (panics.Catch's end).
func (c *conn) failed(err error) *slog.Logger {
	c.v.end(fmt.Errorf("%w: %w", plane.ErrFailed, err))
	return nil
}

// watch closes the viewer when ctx ends, at once: a sender blocked on a
// full ICE-TCP connection (a viewer that reads nothing) must not hold a
// kick or a shutdown until the link drains. No goroutine waits for it;
// the closing one starts only then.
func (c *conn) watch(ctx context.Context) {
	if ctx != nil {
		c.unwatch = context.AfterFunc(ctx, c.v.Close)
	}
}

func (c *conn) Connected() <-chan struct{} { return c.v.Connected() }
func (c *conn) ICEStarted() bool           { return c.v.ICEStarted() }

func (c *conn) State() string {
	select {
	case <-c.v.Done():
		if errors.Is(c.v.Err(), plane.ErrClosed) || errors.Is(c.v.Err(), plane.ErrServerClosed) {
			return "closed"
		}
		return "failed"
	default:
	}
	select {
	case <-c.v.Connected():
		return "connected"
	default:
	}
	if c.v.ICEStarted() {
		return "connecting"
	}
	return "new"
}

func (c *conn) SSRCs() (video, audio uint32) { return c.v.VideoSSRC(), c.v.AudioSSRC() }

// WriteVideo sends the packets as one batch: they are encrypted into the
// pool worker's Sender or a pooled one and handed to the kernel as GSO
// messages (or, over ICE-TCP, one blocking writev).
func (c *conn) WriteVideo(pkts []rtp.Packet) (int, error) {
	if c.batch != nil {
		if err := c.batch.Queue(c.v, pkts); err != nil {
			return 0, err
		}
		return len(pkts), nil
	}
	snd := c.plane.senders.get()
	err := snd.SendFrame(c.v, pkts)
	c.plane.senders.put(snd)
	if err != nil {
		return 0, err
	}
	return len(pkts), nil
}

func (c *conn) WriteAudio(pkt *rtp.Packet) error {
	c.one[0] = *pkt
	_, err := c.WriteVideo(c.one[:])
	c.one[0] = rtp.Packet{} // the payload is the path's, not ours to keep
	return err
}

// WriteRTCP sends the sender's reports: in the pool worker's batch when
// stepped by the pool, alone otherwise.
func (c *conn) WriteRTCP(pkts []rtcp.Packet) error {
	if c.batch != nil {
		return c.batch.QueueRTCP(c.v, pkts)
	}
	return c.v.WriteRTCP(pkts)
}

// Trickle checks the candidates and keeps none: an ICE-lite server never
// sends checks, it answers those that come, from wherever they come.
func (c *conn) Trickle(cands []string) error {
	for i, cand := range cands {
		if _, err := ice.UnmarshalCandidate(cand); err != nil {
			return fmt.Errorf("candidate %d %q: %v", i+1, cand, err)
		}
	}
	return nil
}

func (c *conn) RestartICE(remote plane.ICE) (plane.ICE, error) {
	if err := c.Trickle(remote.Candidates); err != nil {
		return plane.ICE{}, sdpoffer.Errorf("%v", err)
	}
	ufrag, pwd, err := c.v.RestartICE(remote.Ufrag, remote.Pwd)
	if err != nil {
		return plane.ICE{}, err
	}
	return c.plane.localICE(ufrag, pwd), nil
}

// Close ends the viewer: a connected one gets the RTCP BYE and DTLS
// close_notify. Once it returns, the viewer calls no callback any more.
func (c *conn) Close() {
	if c.unwatch != nil {
		c.unwatch()
	}
	c.v.Close()
	c.blocking.Wait()
}
