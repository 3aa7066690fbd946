package main

import (
	"encoding/binary"
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
	// rate, when set, caps the server→client direction at that many bits
	// per second behind a drop-tail queue of buffer bytes (64 KiB when
	// zero, about half a second at 1 Mbit/s): a narrow access link whose
	// router holds a burst such as an IDR and drops what overflows.
	rate   int
	buffer int
	// sent sees every datagram the server sends to the client, before
	// the link loses or queues it.
	sent func(pkt []byte)
	// down sees every datagram the relay delivers to the client.
	down func(pkt []byte)
}

// bottleneck is the queue in front of a capped link. free is when the
// link will have sent everything queued so far.
type bottleneck struct {
	rate, buffer int
	free         time.Time
}

// admit returns when a datagram of n bytes arriving now leaves the link,
// or false when the queue has no room for it.
func (b *bottleneck) admit(n int, now time.Time) (time.Time, bool) {
	if b.free.Before(now) {
		b.free = now
	}
	queued := int(b.free.Sub(now).Seconds() * float64(b.rate) / 8)
	if queued+n > b.buffer {
		return time.Time{}, false
	}
	b.free = b.free.Add(time.Duration(float64(n*8) / float64(b.rate) * float64(time.Second)))
	return b.free, true
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
	// pipe reads one direction and writes it after the delay, in order;
	// with link set, after the link's queue too.
	pipe := func(read func([]byte) (int, error), write func([]byte), link *bottleneck, offered, seen func([]byte)) {
		q := make(chan datagram, 8192)
		wg.Go(func() {
			defer close(q)
			buf := make([]byte, 2048)
			for {
				n, err := read(buf)
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				if offered != nil {
					offered(buf[:n])
				}
				if rand.Float64() < o.loss {
					continue
				}
				out := time.Now()
				if link != nil {
					var ok bool
					if out, ok = link.admit(n, out); !ok {
						continue
					}
				}
				select {
				case q <- datagram{append([]byte(nil), buf[:n]...), out.Add(o.delay)}:
				default: // a full queue is a full router buffer
				}
			}
		})
		wg.Go(func() {
			for d := range q {
				// The link's delay is the datagram's time on the wire:
				// holding it until it is due is what the relay emulates,
				// not a wait for something to happen.
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
	}, func(b []byte) { _, _ = out.Write(b) }, nil, nil, nil)
	var link *bottleneck
	if o.rate > 0 {
		link = &bottleneck{rate: o.rate, buffer: o.buffer}
		if link.buffer == 0 {
			link.buffer = 64 << 10
		}
	}
	pipe(out.Read, func(b []byte) {
		mu.Lock()
		p := peer
		mu.Unlock()
		if p != nil {
			_, _ = in.WriteToUDP(b, p)
		}
	}, link, o.sent, o.down)
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
						// Sleeping until the cap allows the next bytes is the
						// narrow link itself (a live sender's pacing).
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

// rtpHeader reads an RTP packet's sequence number and timestamp, which SRTP
// leaves in the clear; ok is false for RTCP (packet types 64-95 after the
// marker bit, RFC 5761) and anything that is not RTP.
func rtpHeader(p []byte) (seq uint16, ts uint32, ok bool) {
	if len(p) < 12 || p[0]>>6 != 2 || (p[1]&0x7f >= 64 && p[1]&0x7f <= 95) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(p[2:]), binary.BigEndian.Uint32(p[4:]), true
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
