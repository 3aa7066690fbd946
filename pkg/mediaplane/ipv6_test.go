package mediaplane

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// TestIPv6Viewer: on sockets bound to ::1 every candidate, UDP and
// ICE-TCP, is IPv6, and a viewer on IPv6 connects (ICE, DTLS) and
// decrypts a frame that left as one GSO message to an IPv6 address. The
// viewer is the raw peer: pion's ICE agent gathers no candidate on ::1
// (it takes it for an IPv4-compatible address).
func TestIPv6Viewer(t *testing.T) {
	conn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatalf("bind ::1 (the test needs IPv6 on loopback): %v", err)
	}
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	srv, err := New(Config{Conn: conn, TCPListener: ln, Logger: logs.Logger(slog.LevelDebug)})
	if err != nil {
		conn.Close()
		ln.Close()
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { _ = srv.Close() })
	var udp, tcp int
	for _, c := range srv.Candidates() {
		switch f := strings.Fields(c); {
		case len(f) < 5 || f[4] != "::1":
			t.Errorf("candidate not on ::1: %s", c)
		case f[2] == "udp":
			udp++
		case f[2] == "tcp":
			tcp++
		}
	}
	if udp != 1 || tcp != 1 {
		t.Errorf("%d UDP and %d TCP candidates, want one of each: %q", udp, tcp, srv.Candidates())
	}

	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	if r := v.Remote(); !r.Addr().Is6() {
		t.Fatalf("media goes to %v, want the IPv6 peer", r)
	}
	au := frames(2)[1]
	pkts := rtpstamp.NewStamper(v.VideoSSRC(), 102, 1, 1).Stamp(nil, au, false)
	if len(pkts) < 2 {
		t.Fatalf("the frame is %d packets, want several for one GSO message", len(pkts))
	}
	if err := srv.NewSender(4).SendFrame(v, pkts); err != nil {
		t.Fatal(err)
	}
	p.receive(v.VideoSSRC(), pkts)
	v.Close()
}
