package main

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// linkOpts describe one relay: each direction gets delay, and loss drops
// that share of datagrams at random.
type linkOpts struct {
	delay time.Duration
	loss  float64
	// down sees every datagram the relay delivers to the client.
	down func(pkt []byte)
}

// udpLink forwards between the one client that talks to in and the
// server at to. Its goroutines end when the test ends.
func udpLink(t *testing.T, in *net.UDPConn, to *net.UDPAddr, o linkOpts) {
	t.Helper()
	out, err := net.DialUDP("udp4", nil, to)
	if err != nil {
		in.Close()
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		peer *net.UDPAddr
		wg   sync.WaitGroup
	)
	type datagram struct {
		b   []byte
		due time.Time
	}
	// pipe reads one direction and writes it after the delay, in order.
	pipe := func(read func([]byte) (int, error), write func([]byte), seen func([]byte)) {
		q := make(chan datagram, 8192)
		wg.Go(func() {
			defer close(q)
			buf := make([]byte, 2048)
			for {
				n, err := read(buf)
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil || rand.Float64() < o.loss {
					continue
				}
				select {
				case q <- datagram{append([]byte(nil), buf[:n]...), time.Now().Add(o.delay)}:
				default: // a full queue is a full router buffer
				}
			}
		})
		wg.Go(func() {
			for d := range q {
				if wait := time.Until(d.due); wait > 0 {
					time.Sleep(wait)
				}
				if seen != nil {
					seen(d.b)
				}
				write(d.b)
			}
		})
	}
	pipe(func(b []byte) (int, error) {
		n, from, err := in.ReadFromUDP(b)
		if err == nil {
			mu.Lock()
			peer = from
			mu.Unlock()
		}
		return n, err
	}, func(b []byte) { _, _ = out.Write(b) }, nil)
	pipe(out.Read, func(b []byte) {
		mu.Lock()
		p := peer
		mu.Unlock()
		if p != nil {
			_, _ = in.WriteToUDP(b, p)
		}
	}, o.down)
	t.Cleanup(func() {
		in.Close()
		out.Close()
		wg.Wait()
	})
}

// tcpCapLink accepts TCP connections on loopback and forwards each to to,
// delivering the server's bytes at no more than bps bits per second: a
// narrow access link. Its connection to the server has a small receive
// window and an Ethernet-sized MSS: with loopback's 64 KiB segments the
// server's kernel would grow its send buffer to megabytes and soak up the
// excess for many seconds before the server felt the cap.
func tcpCapLink(t *testing.T, to string, bps int) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false // closing
		}
		conns = append(conns, c)
		return true
	}
	conns = []net.Conn{}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := narrowDialer.Dial("tcp4", to)
			if err != nil {
				client.Close()
				continue
			}
			if !track(client) || !track(server) {
				client.Close()
				server.Close()
				return
			}
			wg.Go(func() { _, _ = io.Copy(server, client); server.Close() })
			wg.Go(func() {
				defer client.Close()
				buf := make([]byte, 1400)
				start, sent := time.Now(), 0
				for {
					n, err := server.Read(buf)
					if n > 0 {
						if _, werr := client.Write(buf[:n]); werr != nil {
							return
						}
						sent += n
						// Against the start, so pauses are not made up by bursts
						// beyond the cap later.
						due := start.Add(time.Duration(float64(sent*8) / float64(bps) * float64(time.Second)))
						if wait := time.Until(due); wait > 0 {
							time.Sleep(wait)
						} else if wait < -time.Second {
							start, sent = time.Now(), 0
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// candidatePort points the answer's candidates of proto at port from at
// port to, and drops the others, so a client can only reach the server
// through a relay.
func candidatePort(proto string, from, to int) func(string) string {
	return func(sdp string) string {
		var out []string
		for _, line := range strings.Split(sdp, "\r\n") {
			if f := strings.Fields(line); strings.HasPrefix(line, "a=candidate:") && len(f) > 5 {
				if !strings.EqualFold(f[2], proto) || f[5] != strconv.Itoa(from) {
					continue
				}
				f[5] = strconv.Itoa(to)
				line = strings.Join(f, " ")
			}
			out = append(out, line)
		}
		return strings.Join(out, "\r\n")
	}
}

func addrPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
