package mediaplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// newTCPServer is newServer with an ICE-TCP listener on loopback.
func newTCPServer(t *testing.T, edit func(*Config)) *Server {
	t.Helper()
	srv, _ := newTCPServerLogs(t, edit)
	return srv
}

// newTCPServerLogs is newTCPServer with the server's log lines.
func newTCPServerLogs(t *testing.T, edit func(*Config)) (*Server, *testkit.LogBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, func(c *Config) {
		c.TCPListener = ln
		if edit != nil {
			edit(c)
		}
	})
}

// TestICETCP: a pion viewer that may only use TCP connects through the
// passive candidate, receives every packet of a few frames intact and in
// order over RFC 4571 framing, sends its receiver reports the same way,
// and on Close gets the goodbye and loses its connection; the
// connection's goroutine ends with it.
func TestICETCP(t *testing.T) {
	srv := newTCPServer(t, nil)
	const base = 3 // the demultiplexer, the janitor and the TCP acceptor
	testkit.WaitFor(t, 5*time.Second, "the server's goroutines", func() bool { return mediaplaneGoroutines(t) == base })
	pv := newPionViewerWith(t, false, func(se *webrtc.SettingEngine) {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeTCP4})
	})
	vc := codecsFor(t, pv.offer)
	rl := newRTCPLog()
	vc.OnRTCP = rl.on
	v, answer, err := srv.NewViewer(mustOffer(t, pv.offer), vc)
	if err != nil {
		t.Fatal(err)
	}
	tcpPort := srv.TCPAddr().(*net.TCPAddr).Port
	if !strings.Contains(answer, " tcp ") || !strings.Contains(answer, "tcptype passive") {
		t.Fatalf("answer has no passive TCP candidate on port %d:\n%s", tcpPort, answer)
	}
	pv.accept(t, answer)
	waitConnected(t, v, pv)
	if !v.RemoteTCP() {
		t.Fatalf("media goes to %v, not over ICE-TCP", v.Remote())
	}

	snd := srv.NewSender(0)
	st := rtpstamp.NewStamper(v.VideoSSRC(), vc.Video.PayloadType, 100, 0)
	var sent []rtp.Packet
	for _, au := range frames(30) {
		pkts := st.Stamp(nil, au, false)
		if err := snd.SendFrame(v, pkts); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, pkts...)
	}
	testkit.WaitFor(t, 10*time.Second, "every packet over TCP", func() bool {
		return pv.count(webrtc.RTPCodecTypeVideo) >= len(sent)
	})
	got := pv.packets(webrtc.RTPCodecTypeVideo)
	for i := range sent {
		if got[i].SequenceNumber != sent[i].SequenceNumber || !bytes.Equal(got[i].Payload, sent[i].Payload) {
			t.Fatalf("packet %d: got %s, want %s", i, describe(got[i]), describe(&sent[i]))
		}
	}
	testkit.WaitFor(t, 10*time.Second, "a receiver report over TCP", func() bool { return rl.reports(v.VideoSSRC()) > 0 })
	if err := v.WriteRTCP([]rtcp.Packet{&rtcp.SenderReport{SSRC: v.VideoSSRC()}}); err != nil {
		t.Errorf("WriteRTCP over TCP: %v", err)
	}
	if s := srv.Stats(); s.PacketsSent != uint64(len(sent)) || s.SendErrors != 0 {
		t.Errorf("stats: %d packets sent (want %d), %d errors", s.PacketsSent, len(sent), s.SendErrors)
	}
	if n := mediaplaneGoroutines(t); n != base+1 {
		t.Errorf("%d media-plane goroutines with one ICE-TCP viewer, want %d (one reader for its connection)", n, base+1)
	}

	v.Close()
	testkit.WaitFor(t, 5*time.Second, "the pion viewer to leave connected", func() bool {
		return pv.pc.ConnectionState() != webrtc.PeerConnectionStateConnected
	})
	// As over UDP (TestPionViewer), pion may close on the close_notify
	// before its RTCP reader takes the BYE that came just before it, so
	// the BYE is only reported; TestRawPeer asserts it.
	t.Logf("RTCP BYE over TCP seen by pion: %v", pv.gotBye(v.VideoSSRC()))
	testkit.WaitFor(t, 5*time.Second, "the connection's goroutine to end", func() bool {
		return mediaplaneGoroutines(t) == base
	})
	assertForgotten(t, srv, v)
}

// TestICETCPRefusesStrangers: a connection that never carries a valid
// check is closed after the handshake timeout, and one that sends a frame
// longer than any datagram is closed at once.
func TestICETCPRefusesStrangers(t *testing.T) {
	srv := newTCPServer(t, func(c *Config) { c.HandshakeTimeout = 300 * time.Millisecond })
	dial := func() net.Conn {
		c, err := net.Dial("tcp4", srv.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn, within time.Duration) error {
		_ = c.SetReadDeadline(time.Now().Add(within))
		_, err := c.Read(make([]byte, 1))
		// Unread bytes make the kernel close with a reset instead.
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errors.New("still open")
		}
		return err
	}

	silent := dial()
	if err := closedByServer(silent, 5*time.Second); err != nil {
		t.Errorf("silent connection: %v, want closed by the server after the handshake timeout", err)
	}

	huge := dial()
	var hdr [2]byte
	binary.BigEndian.PutUint16(hdr[:], 60000)
	if _, err := huge.Write(append(hdr[:], make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	if err := closedByServer(huge, 150*time.Millisecond); err != nil {
		t.Errorf("oversized frame: %v, want the connection closed at once", err)
	}
	if s := srv.Stats(); s.DroppedMalformed == 0 {
		t.Errorf("oversized frame not counted as malformed: %+v", s)
	}
}
