package hostile

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestSquatterAfterBlink: on a path without publish credentials (the
// default config) the encoder blinks, and a stranger from another address
// connects to the free path first, sending one MPEG-TS null packet a
// second (no PAT, no picture). The path is not his: the encoder's
// reconnect from its own address is admitted, claims the path with its
// first picture, the stranger's connection is closed with the reason, and
// the viewer that waited through the blink plays on. The figure is the
// time from the reconnect to the viewer's next picture.
func TestSquatterAfterBlink(t *testing.T) {
	const path = "live/squatted"
	srv := startServer(t, "")
	b := startBystander(t, srv)
	enc, err := publishFrom(t, srv, source(0), "publish:"+path)
	if err != nil {
		t.Fatalf("encoder from %v: %v", source(0), err)
	}
	viewer := dialViewer(t, srv, path, "waiting", whepclient.Options{Decode: true})

	enc.Stop() // the blink
	srv.WaitLog(t, 10*time.Second, "publisher closed", "path="+path, "remote="+source(0).String())

	addr, err := net.ResolveUDPAddr("udp", srv.Addrs.SRT)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := srtcall.Dial(addr, srtcall.Options{StreamID: "publish:" + path, LocalIP: source(1)})
	if err != nil {
		t.Fatalf("stranger from %v: %v, want let in to the free path", source(1), err)
	}
	closeSock := sync.OnceFunc(func() { srtcall.Close(sock) })
	stop := make(chan struct{})
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		null := make([]byte, 188)
		null[0], null[1], null[2], null[3] = 0x47, 0x1f, 0xff, 0x10
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if _, err := sock.Write(null); err != nil {
				return // the server closed it
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); closeSock(); <-pumped })
	srv.WaitLog(t, 10*time.Second, "publisher connected", "path="+path, "remote="+source(1).String())

	before := viewer.Stats().DecodedAUs
	reconnect := time.Now()
	if _, err := publishFrom(t, srv, source(0), "publish:"+path); err != nil {
		t.Fatalf("the encoder's reconnect from %v: %v, want admitted: the stranger showed no picture", source(0), err)
	}
	var back time.Duration
	testkit.WaitFor(t, 15*time.Second, "the waiting viewer's next pictures", func() bool {
		if viewer.Stats().DecodedAUs < before+30 {
			return false
		}
		back = time.Since(reconnect)
		return true
	})
	srv.WaitLog(t, 10*time.Second, "pending publisher closed: another claimed the path", "path="+path,
		"remote="+source(1).String(), "claimed_by="+source(0).String())
	select {
	case <-viewer.Done():
		t.Errorf("the waiting viewer's session ended: %v", viewer.Err())
	default:
	}
	t.Logf("stranger %v sending a null packet a second after the encoder blinked: the encoder's reconnect from %v was admitted and its viewer had 30 new pictures %.1f s later; the stranger was closed",
		source(1), source(0), back.Seconds())
	b.waitWindow()
	b.Check(t)
}
