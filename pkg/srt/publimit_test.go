package srt

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/panics"
)

// holdServe keeps each publisher until the test ends or it disconnects.
func holdServe(ctx context.Context, c *Conn) error {
	buf := make([]byte, readBufSize)
	for {
		if _, err := c.Read(buf); err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// TestPublisherCaps: past srt.maxPublishersPerIP from one address, and
// past srt.maxPublishers in all, a publisher is refused in the handshake
// with overload (1402) and a log line naming the setting; readers are not
// counted; a publisher that leaves frees its place.
func TestPublisherCaps(t *testing.T) {
	r := startServer(t, Config{Serve: holdServe, MaxPublishers: 3, MaxPublishersPerIP: 2,
		AdmitRead: func(Request) error { return nil },
		ServeRead: func(ctx context.Context, _ *Conn) { <-ctx.Done() }})
	from := func(ip string) DialConfig {
		return DialConfig{StreamID: "publish:live/" + strings.ReplaceAll(ip, ".", "-"), LocalIP: netip.MustParseAddr(ip)}
	}
	dial := func(cfg DialConfig) (*srtgo.SrtSocket, error) {
		s, err := dialCaller(r.srv.Addr(), cfg)
		if err == nil {
			t.Cleanup(func() { closeCaller(s) })
		}
		return s, err
	}
	wantRefused := func(err error, setting string) {
		t.Helper()
		var de *DialError
		if !errors.As(err, &de) || de.Reason != srtgo.RejectionReasonOverload {
			t.Fatalf("got %v, want refused with overload (1402)", err)
		}
		r.log.wait(t, 5*time.Second, "naming "+setting, func(l logLine) bool {
			return l.msg == "srt publisher rejected" && strings.Contains(l.attrs["err"], setting)
		})
	}
	first, err := dialCaller(r.srv.Addr(), from("127.0.0.2")) // closed below
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(from("127.0.0.2")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "two publishers counted", func() bool { return r.srv.Publishers() == 2 })
	_, err = dial(from("127.0.0.2"))
	wantRefused(err, "(srt.maxPublishersPerIP)")
	// A reader from the same address is not a publisher.
	if _, err := dial(DialConfig{StreamID: "read:live/x", LocalIP: netip.MustParseAddr("127.0.0.2")}); err != nil {
		t.Fatalf("reader from a full address: %v", err)
	}
	if _, err := dial(from("127.0.0.3")); err != nil {
		t.Fatalf("another address: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "three publishers counted", func() bool { return r.srv.Publishers() == 3 })
	_, err = dial(from("127.0.0.4"))
	wantRefused(err, "(srt.maxPublishers)")

	closeCaller(first)
	testkit.WaitFor(t, 10*time.Second, "the first publisher's place freed", func() bool { return r.srv.Publishers() == 2 })
	if _, err := dial(from("127.0.0.4")); err != nil {
		t.Fatalf("after a publisher left: %v", err)
	}
}

// TestServePanics: a panic in one publisher's Serve ends that publisher,
// logged with its stack and counted; another publisher connected at the
// same time goes on reading, and the server keeps accepting.
func TestServePanics(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int64{}
	serve := func(ctx context.Context, c *Conn) error {
		buf := make([]byte, readBufSize)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return nil
			}
			if c.Path() == "live/boom" {
				var m map[int]int
				m[n]++ // a real runtime panic: assignment to entry in nil map
			}
			mu.Lock()
			got[c.Path()] += int64(n)
			mu.Unlock()
		}
	}
	r := startServer(t, Config{Serve: serve})
	before := panics.Counts()[panics.SRTPublisher]
	ok, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/ok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeCaller(ok) })
	boom, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/boom"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeCaller(boom) })
	msg := tsMessage(1)
	if _, err := boom.Write(msg); err != nil {
		t.Fatal(err)
	}
	r.log.wait(t, 5*time.Second, "the panic", func(l logLine) bool {
		return l.msg == "panic recovered: the connection is closed, the server goes on" && l.attrs["path"] == "live/boom" &&
			l.attrs["where"] == panics.SRTPublisher && strings.Contains(l.attrs["stack"], "publimit_test.go")
	})
	r.log.wait(t, 5*time.Second, "the panicking publisher closed", func(l logLine) bool {
		return l.msg == "publisher closed" && l.attrs["path"] == "live/boom" && strings.Contains(l.attrs["reason"], "panic")
	})
	if n := panics.Counts()[panics.SRTPublisher] - before; n != 1 {
		t.Errorf("%d panics counted, want 1", n)
	}
	for range 10 {
		if _, err := ok.Write(msg); err != nil {
			t.Fatalf("the other publisher: %v", err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the other publisher's bytes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["live/ok"] >= 10*1316
	})
	again, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/later"})
	if err != nil {
		t.Fatalf("a new publisher after the panic: %v", err)
	}
	closeCaller(again)
}
