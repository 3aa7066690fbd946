package pionplane

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m, nil, nil) }

func listen(t testing.TB, network, addr string) *net.UDPConn {
	t.Helper()
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP(network, ua)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	return c
}

// receive reads n datagrams (or fails at the deadline).
func receive(t *testing.T, c *net.UDPConn, n int) [][]byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out [][]byte
	buf := make([]byte, 2000)
	for len(out) < n {
		k, _, err := c.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(out), n, err)
		}
		out = append(out, append([]byte(nil), buf[:k]...))
	}
	return out
}

func datagram(i, size int) []byte {
	b := bytes.Repeat([]byte{byte(i)}, size)
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

func TestBatchesKeepOrderAndContent(t *testing.T) {
	for _, tc := range []struct{ name, network, bind string }{
		{"ipv4 socket", "udp4", "127.0.0.1:0"},
		{"dual-stack socket to an IPv4 peer", "udp", ":0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := listen(t, "udp4", "127.0.0.1:0")
			defer rx.Close()
			tx := listen(t, tc.network, tc.bind)
			c, err := NewBatchConn(tx, 8, time.Hour) // only full batches and Flush send
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const n = 100
			for i := 0; i < n; i++ {
				if _, err := c.WriteTo(datagram(i, 100+i*10), rx.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			c.Flush()
			got := receive(t, rx, n)
			for i, g := range got {
				if !bytes.Equal(g, datagram(i, 100+i*10)) {
					t.Fatalf("datagram %d differs (len %d)", i, len(g))
				}
			}
			st := c.Stats()
			if st.Datagrams != n || st.Syscalls > n/8+1 || st.Errors != 0 {
				t.Errorf("stats %+v, want %d datagrams in at most %d system calls", st, n, n/8+1)
			}
		})
	}
}

// A lone datagram must not wait for a batch to fill.
func TestDelayFlushesPartialBatch(t *testing.T) {
	rx := listen(t, "udp4", "127.0.0.1:0")
	defer rx.Close()
	c, err := NewBatchConn(listen(t, "udp4", "127.0.0.1:0"), 64, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteTo([]byte("alone"), rx.LocalAddr())
	if got := receive(t, rx, 1); string(got[0]) != "alone" {
		t.Fatalf("got %q", got[0])
	}
}

// Oversized datagrams and non-UDP addresses bypass the batch.
func TestOversizedGoesDirect(t *testing.T) {
	rx := listen(t, "udp4", "127.0.0.1:0")
	defer rx.Close()
	c, err := NewBatchConn(listen(t, "udp4", "127.0.0.1:0"), 4, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := datagram(7, 1800)
	if _, err := c.WriteTo(big, rx.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, rx, 1); !bytes.Equal(got[0], big) {
		t.Fatal("oversized datagram altered")
	}
}

// Each writer's datagrams arrive in its own order, whatever the
// interleaving with other writers.
func TestConcurrentWritersPerPeerOrder(t *testing.T) {
	const writers, each = 4, 200
	var rxs []*net.UDPConn
	for i := 0; i < writers; i++ {
		rx := listen(t, "udp4", "127.0.0.1:0")
		defer rx.Close()
		rxs = append(rxs, rx)
	}
	c, err := NewBatchConn(listen(t, "udp4", "127.0.0.1:0"), 16, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c.WriteTo(datagram(i, 200), rxs[w].LocalAddr())
			}
		}()
	}
	wg.Wait()
	c.Flush()
	for w := 0; w < writers; w++ {
		for i, g := range receive(t, rxs[w], each) {
			if got := binary.BigEndian.Uint32(g); got != uint32(i) {
				t.Fatalf("writer %d: datagram %d arrived as %d", w, i, got)
			}
		}
	}
}

func TestWriteAfterClose(t *testing.T) {
	c, err := NewBatchConn(listen(t, "udp4", "127.0.0.1:0"), 4, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); err != ErrBatchClosed {
		t.Fatalf("err = %v, want ErrBatchClosed", err)
	}
}

// BenchmarkWriteTo compares one sendto per datagram with the batched path;
// the kernel's share dominates, which is the point of batching.
func BenchmarkWriteTo(b *testing.B) {
	payload := make([]byte, 1200)
	for _, mode := range []string{"sendto", "batched"} {
		b.Run(mode, func(b *testing.B) {
			rx := listen(b, "udp4", "127.0.0.1:0")
			defer rx.Close()
			go func() {
				buf := make([]byte, 2000)
				for {
					if _, _, err := rx.ReadFromUDP(buf); err != nil {
						return
					}
				}
			}()
			tx := listen(b, "udp4", "127.0.0.1:0")
			var w net.PacketConn = tx
			if mode == "batched" {
				c, err := NewBatchConn(tx, 64, time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				w = c
			}
			defer w.Close()
			addr := rx.LocalAddr()
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.WriteTo(payload, addr)
			}
		})
	}
}

// Runs of equal-size datagrams to one peer leave as one UDP GSO message;
// the receiver still gets them as separate datagrams, in order, intact,
// and a shorter datagram ends a run without being merged into it.
func TestGSORunsArriveAsDatagrams(t *testing.T) {
	rxA := listen(t, "udp4", "127.0.0.1:0")
	defer rxA.Close()
	rxB := listen(t, "udp4", "127.0.0.1:0")
	defer rxB.Close()
	c, err := NewBatchConn(listen(t, "udp4", "127.0.0.1:0"), 64, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A video frame to A (10 full packets and a short tail), one to B,
	// then A again: three runs.
	var wantA, wantB [][]byte
	for i := 0; i < 11; i++ {
		size := 1228
		if i == 10 {
			size = 300
		}
		d := datagram(i, size)
		wantA = append(wantA, d)
		c.WriteTo(d, rxA.LocalAddr())
	}
	for i := 0; i < 5; i++ {
		d := datagram(100+i, 1228)
		wantB = append(wantB, d)
		c.WriteTo(d, rxB.LocalAddr())
	}
	for i := 11; i < 20; i++ {
		d := datagram(i, 1228)
		wantA = append(wantA, d)
		c.WriteTo(d, rxA.LocalAddr())
	}
	c.Flush()
	for name, tc := range map[string]struct {
		rx   *net.UDPConn
		want [][]byte
	}{"A": {rxA, wantA}, "B": {rxB, wantB}} {
		got := receive(t, tc.rx, len(tc.want))
		for i := range got {
			if !bytes.Equal(got[i], tc.want[i]) {
				t.Fatalf("peer %s datagram %d: got %d bytes starting %x, want %d bytes", name, i, len(got[i]), got[i][:4], len(tc.want[i]))
			}
		}
	}
	st := c.Stats()
	if st.Datagrams != 25 || st.Errors != 0 {
		t.Errorf("stats %+v, want 25 datagrams and no errors", st)
	}
	if !c.gso.Load() {
		t.Log("this kernel refused UDP GSO; the plain path was used")
	}
}
