package mediaplane

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pion/srtp/v3"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// dialTCPFrom opens an ICE-TCP connection to srv from the loopback
// address from, closed when the test ends; nil when the server's reset
// of a refused connection came before connect returned.
func dialTCPFrom(t *testing.T, srv *Server, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp4", srv.TCPAddr().String())
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serverClosed reports whether the server closed c (nil: at connect): a
// read ends in EOF or a reset rather than waiting out within.
func serverClosed(c net.Conn, within time.Duration) bool {
	if c == nil {
		return true
	}
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func tcpConnCount(srv *Server) int {
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	return len(srv.tcpConns)
}

// TestICETCPPerClientCap: past Config.MaxTCPPerClient from one address,
// new connections are closed at accept, counted, and logged at most once
// a second; another address still gets its own, and a closed connection
// frees its client's slot.
func TestICETCPPerClientCap(t *testing.T) {
	const limit, over = 3, 12
	srv, logs := newTCPServerLogs(t, func(c *Config) { c.MaxTCPPerClient = limit })
	start := time.Now()
	var kept []net.Conn
	for range limit {
		c := dialTCPFrom(t, srv, "127.0.0.1")
		if c == nil {
			t.Fatal("a connection within the cap was reset")
		}
		kept = append(kept, c)
	}
	testkit.WaitFor(t, 5*time.Second, "the client's first connections to be accepted", func() bool { return tcpConnCount(srv) == limit })
	for i := range over {
		if c := dialTCPFrom(t, srv, "127.0.0.1"); !serverClosed(c, 5*time.Second) {
			t.Fatalf("connection %d over the per-client cap of %d still open", i+1, limit)
		}
	}
	elapsed := time.Since(start)
	if st := srv.Stats(); st.TCPRefusedPerClient != over || st.TCPRefusedGlobal != 0 {
		t.Errorf("refused per client %d (want %d), global %d (want 0)", st.TCPRefusedPerClient, over, st.TCPRefusedGlobal)
	}
	lines := logs.Lines("ICE-TCP connection refused: too many from this client", "remote=127.0.0.1", "limit=3")
	if len(lines) == 0 || len(lines) > 1+int(elapsed/time.Second) {
		t.Errorf("%d log lines for %d refusals in %v, want one a second at most:\n%s", len(lines), over, elapsed, logs)
	}
	for _, c := range kept {
		if serverClosed(c, 10*time.Millisecond) {
			t.Error("a connection within the cap was closed")
		}
	}

	dialTCPFrom(t, srv, "127.0.0.2")
	testkit.WaitFor(t, 5*time.Second, "another client's connection to be accepted", func() bool { return tcpConnCount(srv) == limit+1 })

	kept[0].Close()
	testkit.WaitFor(t, 5*time.Second, "the closed connection to be forgotten", func() bool { return tcpConnCount(srv) == limit })
	dialTCPFrom(t, srv, "127.0.0.1")
	testkit.WaitFor(t, 5*time.Second, "the freed slot to take a new connection", func() bool { return tcpConnCount(srv) == limit+1 })
	t.Logf("%d connections refused over a cap of %d in %v, %d log lines", over, limit, elapsed, len(lines))
}

// TestICETCPEvictedClosed: a viewer that validates more ICE-TCP
// connections than its address table holds has the oldest one closed
// and counted, not left open with nothing routing to it.
func TestICETCPEvictedClosed(t *testing.T) {
	srv := newTCPServer(t, func(c *Config) { c.MaxTCPPerClient = 2 * maxAddrsPerViewer })
	sink := newSink(t, false)
	v, _ := keyedViewer(t, srv, sink.addr(), srtp.ProtectionProfileAeadAes128Gcm)
	t.Cleanup(v.Close)
	creds := newCreds(v, "tcppeer")
	srv.mu.Lock()
	v.creds = creds
	srv.byUfrag[creds.ufrag] = creds
	srv.mu.Unlock()
	check := func(c net.Conn) {
		req := testkit.ICECheck{ServerUfrag: creds.ufrag, ClientUfrag: creds.remoteUfrag, Password: creds.pwd}.Build(t)
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(req.Raw))), req.Raw...)); err != nil {
			t.Fatal(err)
		}
	}
	addrs := func() int {
		srv.mu.RLock()
		defer srv.mu.RUnlock()
		return len(v.addrs)
	}
	var conns []net.Conn
	for i := range maxAddrsPerViewer + 1 {
		c := dialTCPFrom(t, srv, "127.0.0.1")
		if c == nil {
			t.Fatal("a connection within the cap was reset")
		}
		conns = append(conns, c)
		check(c)
		if i < maxAddrsPerViewer {
			testkit.WaitFor(t, 5*time.Second, "the check to validate the connection", func() bool { return addrs() == i+1 })
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the eviction", func() bool { return srv.Stats().TCPEvicted == 1 })
	// The oldest has our answer to read first, then the close.
	_ = conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conns[0]); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the evicted connection is still open")
		}
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the evicted connection to be forgotten", func() bool {
		return tcpConnCount(srv) == maxAddrsPerViewer
	})
	if n := addrs(); n != maxAddrsPerViewer {
		t.Errorf("viewer holds %d addresses, want %d", n, maxAddrsPerViewer)
	}
	select {
	case <-v.Done():
		t.Fatalf("viewer ended: %v", v.Err())
	default:
	}
}
