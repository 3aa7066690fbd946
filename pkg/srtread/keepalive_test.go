package srtread

import (
	"bytes"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// A reader of a path between two publishers (within the publisher grace)
// gets a null packet about every keepAliveAfter, and no more often, so a
// reader that hangs up on silence, as an edge's pull does after
// srt.readTimeout, stays; the next publisher's stream then follows on the
// same connection from its IDR, and mediacommon's demuxer, which an edge
// reads it with, skips the null packets.
func TestReaderKeepAlive(t *testing.T) {
	const path = "live/cam1"
	r := startRig(t, hub.Config{}, nil)
	publishGOP := func() *hub.Publisher {
		t.Helper()
		pub, err := r.hub.PublishWith(path, "127.0.0.1:1", hub.PublishOptions{Override: true, Grace: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range mkStream(0, 0, 30, 30, nil).frames {
			pub.Write(f.Video)
		}
		return pub
	}
	first := publishGOP()
	testkit.WaitFor(t, 10*time.Second, "a GOP in the hub", func() bool { return r.hub.State(path).Playable })
	sock, _ := dialRead(t, r, srtcall.Options{StreamID: "read:" + path})

	var all []byte
	buf := make([]byte, 1500)
	// read takes one message, returning whether it is a null packet.
	read := func() bool {
		t.Helper()
		n, err := sock.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(all), err)
		}
		all = append(all, buf[:n]...)
		return n == tsPacketSize && bytes.Equal(buf[1:3], nullPacket[1:3])
	}
	// The cached GOP, then silence once the publisher leaves.
	r.logs.WaitLog(t, 10*time.Second, "reader opened", "path="+path)
	first.Close()
	var nulls []time.Time
	for start := time.Now(); time.Since(start) < 2200*time.Millisecond; {
		if read() {
			nulls = append(nulls, time.Now())
		}
	}
	if len(nulls) < 3 {
		t.Fatalf("%d null packets in 2.2 s without a publisher, want one about every %v", len(nulls), keepAliveAfter)
	}
	for i := 1; i < len(nulls); i++ {
		if d := nulls[i].Sub(nulls[i-1]); d < keepAliveAfter*8/10 {
			t.Errorf("null packets %v apart, want at least %v", d, keepAliveAfter)
		}
	}
	t.Logf("%d null packets in 2.2 s between publishers", len(nulls))

	publishGOP()
	r.logs.WaitLog(t, 10*time.Second, "reader continues with a new publisher", "path="+path)
	for deadline := time.Now().Add(10 * time.Second); len(walkTS(t, all).pts[videoPID]) < 60; {
		if time.Now().After(deadline) {
			t.Fatalf("%d pictures of the two publishers in 10 s, want 60", len(walkTS(t, all).pts[videoPID]))
		}
		read()
	}
	rep := walkTS(t, all)
	if len(rep.ccErrors) != 0 {
		t.Errorf("continuity errors: %v", rep.ccErrors)
	}
	d := demux(t, all)
	if len(d.video) != 60 || !d.firstIDR {
		t.Errorf("mediacommon read %d pictures (first IDR %v) through the null packets, want 60", len(d.video), d.firstIDR)
	}
}
