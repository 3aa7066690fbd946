package mmsg

import (
	"bytes"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sock is a loopback UDP socket with what the tests hand to a batch.
type sock struct {
	*net.UDPConn
	rc syscall.RawConn
	ap netip.AddrPort
}

func listen(t testing.TB) sock {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return sock{UDPConn: c, rc: rc, ap: c.LocalAddr().(*net.UDPAddr).AddrPort()}
}

// fd is s's descriptor, for RecvFD.
func (s sock) fd() int {
	var fd int
	_ = s.rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// datagram is n bytes that tell datagram id apart.
func datagram(id, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(id + i)
	}
	return b
}

// receive reads want datagrams from rx with one RecvBatch, or fails.
func receive(t *testing.T, rx sock, want int) [][]byte {
	t.Helper()
	rb := NewRecvBatch(8, 2048, 0)
	_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got [][]byte
	for len(got) < want {
		n, errno, err := rb.Recv(rx.rc)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		if errno != 0 {
			t.Fatalf("recvmmsg: %v", errno)
		}
		for i := range n {
			got = append(got, bytes.Clone(rb.Data(i)))
		}
	}
	return got
}

// TestLayout: Hdr is struct mmsghdr, whose size the kernel uses to step
// through the array (the compile-time checks say the same).
func TestLayout(t *testing.T) {
	want := uintptr(64) // amd64, arm64 and every 64-bit Linux
	if unsafe.Sizeof(uintptr(0)) == 4 {
		want = 32
	}
	if got := unsafe.Sizeof(Hdr{}); got != want {
		t.Errorf("sizeof(Hdr) = %d, want %d", got, want)
	}
	if got := unsafe.Offsetof(Hdr{}.Len); got != unix.SizeofMsghdr {
		t.Errorf("offsetof(Hdr.Len) = %d, want %d", got, unix.SizeofMsghdr)
	}
}

func TestSockaddr(t *testing.T) {
	for _, tc := range []struct {
		ap    string
		inet6 bool
		nlen  uint32
	}{
		{"127.0.0.1:5004", false, unix.SizeofSockaddrInet4},
		{"127.0.0.1:5004", true, unix.SizeofSockaddrInet6}, // v4-mapped
		{"[::ffff:10.0.0.1]:9", false, unix.SizeofSockaddrInet4},
		{"[2001:db8::1]:443", true, unix.SizeofSockaddrInet6},
	} {
		ap := netip.MustParseAddrPort(tc.ap)
		var sa Sockaddr
		if n := sa.Set(ap, tc.inet6); n != tc.nlen {
			t.Errorf("%s inet6=%v: length %d, want %d", tc.ap, tc.inet6, n, tc.nlen)
		}
		got, ok := sa.AddrPort()
		want := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if !ok || got != want {
			t.Errorf("%s inet6=%v: read back %v %v, want %v", tc.ap, tc.inet6, got, ok, want)
		}
	}
	var none Sockaddr
	if _, ok := none.AddrPort(); ok {
		t.Error("AF_UNSPEC read as an address")
	}
}

// TestGSOSegments: a run of equal datagrams and a shorter tail to one
// peer leaves as one segmented message, and the peer receives each as
// its own datagram of its own size, in order.
func TestGSOSegments(t *testing.T) {
	rx, tx := listen(t), listen(t)
	var to Sockaddr
	nlen := to.Set(rx.ap, false)
	sizes := []int{1000, 1000, 1000, 1000, 1000, 300}
	want := make([][]byte, len(sizes))
	b := NewSendBatch(16)
	for i, n := range sizes {
		want[i] = datagram(i, n)
		b.Add(want[i], &to, nlen, true)
	}
	if b.Messages() != 1 || b.Len() != len(sizes) {
		t.Fatalf("%d datagrams in %d messages, want %d in 1", b.Len(), b.Messages(), len(sizes))
	}
	res, err := b.Send(tx.rc)
	if err != nil {
		t.Fatal(err)
	}
	if res.GSORefused {
		t.Log("this kernel refused UDP GSO; the datagrams went out one per message")
	} else if res.Messages != 1 || res.Syscalls != 1 {
		t.Errorf("%+v, want 1 message in 1 call", res)
	}
	if res.Datagrams != len(sizes) || res.Dropped != 0 {
		t.Errorf("%+v, want %d datagrams, none dropped", res, len(sizes))
	}
	got := receive(t, rx, len(sizes))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("datagram %d: %d bytes, want %d", i, len(got[i]), len(want[i]))
		}
	}
	if b.Len() != 0 || b.Messages() != 0 {
		t.Error("Send left the batch non-empty")
	}
}

// TestGrouping: what joins a message and what starts one.
func TestGrouping(t *testing.T) {
	var a, c Sockaddr
	na := a.Set(netip.MustParseAddrPort("127.0.0.1:1000"), false)
	nc := c.Set(netip.MustParseAddrPort("127.0.0.1:1001"), false)
	big := make([]byte, 1200)
	b := NewSendBatch(200)
	add := func(n int, to *Sockaddr, nlen uint32, join bool) { b.Add(big[:n], to, nlen, join) }
	add(1200, &a, na, true)
	add(1200, &a, na, true)  // joins
	add(1100, &a, na, true)  // joins as the short tail
	add(1100, &a, na, true)  // after a short tail: new
	add(1200, &a, na, true)  // larger than the first segment: new
	add(1200, &c, nc, true)  // another peer: new
	add(1200, &c, nc, false) // the caller keeps it apart: new
	if want := []int{3, 1, 1, 1, 1}; b.Messages() != len(want) {
		t.Fatalf("%d messages, want %d", b.Messages(), len(want))
	} else {
		for m, s := range want {
			if b.segs[m] != s {
				t.Errorf("message %d has %d segments, want %d", m, b.segs[m], s)
			}
		}
	}
	// 64 KiB: 54 segments of 1200 bytes fit, the 55th starts a message.
	b.Reset()
	for range 55 {
		add(1200, &a, na, true)
	}
	if b.Messages() != 2 || b.segs[0] != 54 {
		t.Errorf("55 × 1200 bytes: %d messages, the first of %d segments; want 2, 54", b.Messages(), b.segs[0])
	}
	// At most 64 segments a message.
	b.Reset()
	for range 65 {
		add(100, &a, na, true)
	}
	if b.Messages() != 2 || b.segs[0] != MaxGSOSegments {
		t.Errorf("65 × 100 bytes: %d messages, the first of %d segments", b.Messages(), b.segs[0])
	}
}

// TestSplit: the GSO fallback turns every message from the given one on
// into single datagrams, in order, and they arrive intact.
func TestSplit(t *testing.T) {
	rx, ry, tx := listen(t), listen(t), listen(t)
	var to, other Sockaddr
	nlen := to.Set(rx.ap, false)
	olen := other.Set(ry.ap, false)
	b := NewSendBatch(16)
	var want [][]byte
	for i, n := range []int{800, 800, 800, 200} {
		d := datagram(i, n)
		want = append(want, d)
		b.Add(d, &to, nlen, true)
	}
	d := datagram(50, 10)
	b.Add(d, &other, olen, true)
	for i, n := range []int{700, 700} {
		d := datagram(10+i, n)
		want = append(want, d)
		b.Add(d, &to, nlen, true)
	}
	if b.Messages() != 3 {
		t.Fatalf("%d messages before the split, want 3", b.Messages())
	}
	b.Split(0)
	if b.Messages() != 7 {
		t.Fatalf("%d messages after the split, want 7", b.Messages())
	}
	for m := range b.Messages() {
		if b.segs[m] != 1 || b.hdrs[m].Msghdr.Control != nil || b.first[m] != m {
			t.Fatalf("message %d: %d segments from iovec %d, control %v", m, b.segs[m], b.first[m], b.hdrs[m].Msghdr.Control)
		}
	}
	res, err := b.Send(tx.rc)
	if err != nil || res.Messages != 7 || res.Datagrams != 7 {
		t.Fatalf("%+v, %v; want 7 messages", res, err)
	}
	got := receive(t, rx, len(want))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("datagram %d: %d bytes, want %d", i, len(got[i]), len(want[i]))
		}
	}
	if got := receive(t, ry, 1); !bytes.Equal(got[0], d) {
		t.Errorf("other peer got %d bytes", len(got[0]))
	}
}
