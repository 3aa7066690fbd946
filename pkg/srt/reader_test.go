package srt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// A caller that reads reaches ServeRead, not Serve: AdmitRead decides
// with reject reasons, Write delivers whole messages in order, and the
// reader's leaving ends ServeRead's context with ErrDisconnected even
// while nothing is written. Readers are not among the publishers.
func TestReaders(t *testing.T) {
	type ended struct {
		cause  error
		writes int
		err    error // the Write error, if one ended it
	}
	done := make(chan ended, 4)
	written := make(chan struct{}, 4)
	r := startServer(t, Config{
		Serve: func(context.Context, *Conn) error { return errors.New("a reader reached Serve") },
		AdmitRead: func(req Request) error {
			if req.StreamID.Path == "live/none" {
				return fmt.Errorf("read %q: %w", req.StreamID.Path, hub.ErrNoPublisher)
			}
			return nil
		},
		ServeRead: func(ctx context.Context, c *Conn) {
			var e ended
			for i := range 20 {
				if _, err := c.Write(tsMessage(byte(i))); err != nil {
					e.err = err
					break
				}
				e.writes++
			}
			written <- struct{}{}
			<-ctx.Done()
			e.cause = context.Cause(ctx)
			done <- e
		},
	})

	sock, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "#!::m=request,r=live/cam1", ReadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	var got []byte
	buf := make([]byte, 1500)
	for len(got) < 20*1316 {
		n, err := sock.Read(buf)
		if err != nil {
			closeCaller(sock)
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		if n != 1316 {
			t.Fatalf("a %d-byte message, want 1316", n)
		}
		got = append(got, buf[:n]...)
	}
	for i := range 20 {
		if !bytes.Equal(got[i*1316:(i+1)*1316], tsMessage(byte(i))) {
			t.Fatalf("message %d differs", i)
		}
	}
	<-written
	if cs := r.srv.Conns(); len(cs) != 0 {
		t.Fatalf("Conns() = %+v with only a reader connected", cs)
	}
	closeCaller(sock)
	select {
	case e := <-done:
		if e.writes != 20 || e.err != nil || !errors.Is(e.cause, ErrDisconnected) {
			t.Fatalf("ServeRead wrote %d (%v), ended by %v; want 20, nil, ErrDisconnected", e.writes, e.err, e.cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeRead did not end after the reader left")
	}

	_, err = dialCaller(r.srv.Addr(), DialConfig{StreamID: "read:live/none"})
	var rej *DialError
	if !errors.As(err, &rej) || rej.Reason != srtgo.RejectionReasonNotFound {
		t.Fatalf("read of a path without publisher: %v, want reject reason %d", err, srtgo.RejectionReasonNotFound)
	}
	r.log.wait(t, 5*time.Second, "the reader's rejection", func(l logLine) bool {
		return l.msg == "srt reader rejected" && l.attrs["path"] == "live/none" && l.attrs["reason"] == reasonName(srtgo.RejectionReasonNotFound)
	})
}
