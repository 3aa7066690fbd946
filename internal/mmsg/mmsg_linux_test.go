package mmsg

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
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

// TestRecvAddresses: one recvmmsg fills several messages, each with its
// sender's address.
func TestRecvAddresses(t *testing.T) {
	rx, a, c := listen(t), listen(t), listen(t)
	to := rx.LocalAddr()
	for i, s := range []sock{a, c, a} {
		if _, err := s.WriteTo(datagram(i, 100+i), to); err != nil {
			t.Fatal(err)
		}
	}
	rb := NewRecvBatch(8, 1500, 0)
	n, errno, err := rb.Recv(rx.rc)
	if err != nil || errno != 0 {
		t.Fatal(err, errno)
	}
	if n != 3 {
		t.Fatalf("%d datagrams in one call, want 3", n)
	}
	for i, s := range []sock{a, c, a} {
		from, ok := rb.Addr(i)
		if !ok || from != s.ap {
			t.Errorf("datagram %d from %v, want %v", i, from, s.ap)
		}
		if d := rb.Data(i); !bytes.Equal(d, datagram(i, 100+i)) || rb.Truncated(i) {
			t.Errorf("datagram %d: %d bytes (truncated %v)", i, len(d), rb.Truncated(i))
		}
	}
}

// TestRecvTruncated: a datagram longer than the buffer is cut and
// flagged; the next one, which fits, is not.
func TestRecvTruncated(t *testing.T) {
	rx, tx := listen(t), listen(t)
	for _, n := range []int{300, 100} {
		if _, err := tx.WriteTo(datagram(n, n), rx.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	rb := NewRecvBatch(4, 200, 0)
	n, errno, err := rb.Recv(rx.rc)
	if err != nil || errno != 0 || n != 2 {
		t.Fatalf("n=%d errno=%v err=%v, want 2 datagrams", n, errno, err)
	}
	if !rb.Truncated(0) || len(rb.Data(0)) != 200 || !bytes.Equal(rb.Data(0), datagram(300, 300)[:200]) {
		t.Errorf("long datagram: truncated %v, %d bytes", rb.Truncated(0), len(rb.Data(0)))
	}
	if rb.Truncated(1) || len(rb.Data(1)) != 100 {
		t.Errorf("short datagram: truncated %v, %d bytes", rb.Truncated(1), len(rb.Data(1)))
	}
}

// TestRecvControl: a control buffer comes back with what the kernel
// wrote (here SO_TIMESTAMPNS).
func TestRecvControl(t *testing.T) {
	rx, tx := listen(t), listen(t)
	var serr error
	_ = rx.rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
	if serr != nil {
		t.Skip("SO_TIMESTAMPNS:", serr)
	}
	if _, err := tx.WriteTo([]byte("x"), rx.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	rb := NewRecvBatch(2, 100, 60) // rounded up to 64
	n, errno, err := rb.Recv(rx.rc)
	if err != nil || errno != 0 || n != 1 {
		t.Fatalf("n=%d errno=%v err=%v", n, errno, err)
	}
	cm := rb.Control(0)
	if len(cm) < unix.CmsgSpace(16) {
		t.Fatalf("%d control bytes", len(cm))
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
	if h.Level != unix.SOL_SOCKET || h.Type != unix.SCM_TIMESTAMPNS {
		t.Errorf("control message %d/%d", h.Level, h.Type)
	}
	if uintptr(unsafe.Pointer(&cm[0]))%8 != 0 || uintptr(unsafe.Pointer(&rb.ctrl[rb.csize]))%8 != 0 || rb.csize != 64 {
		t.Error("control buffers not aligned")
	}
}

// counting is a socket's RawConn that counts how often a batch asks the
// kernel (each call of the batch's callback).
type counting struct {
	rc    syscall.RawConn
	calls atomic.Int32
}

func (c *counting) count(f func(uintptr) bool) func(uintptr) bool {
	return func(fd uintptr) bool {
		c.calls.Add(1)
		return f(fd)
	}
}

func (c *counting) Read(f func(uintptr) bool) error  { return c.rc.Read(c.count(f)) }
func (c *counting) Write(f func(uintptr) bool) error { return c.rc.Write(c.count(f)) }

// parked checks that the call running in the background, which reports
// on done, has asked the kernel once and not returned a while later: it
// waits in the netpoller instead of trying again.
func parked[T any](t *testing.T, c *counting, done <-chan T, what string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-done:
		t.Fatalf("%s returned", what)
	default:
	}
	if n := c.calls.Load(); n != 1 {
		t.Errorf("%s: %d system calls, want 1 (then a wait in the netpoller)", what, n)
	}
}

// TestRecvWaitsInPoller: with nothing queued the non-blocking recvmmsg
// gets EAGAIN once and the goroutine parks in the netpoller until a
// datagram comes, rather than calling again and again.
func TestRecvWaitsInPoller(t *testing.T) {
	rx, tx := listen(t), listen(t)
	cr := &counting{rc: rx.rc}
	rb := NewRecvBatch(4, 1500, 0)
	done := make(chan int)
	go func() {
		n, _, _ := rb.Recv(cr)
		done <- n
	}()
	parked(t, cr, done, "Recv with nothing sent")
	if _, err := tx.WriteTo([]byte("wake"), rx.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("%d datagrams, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv did not wake up")
	}
	if c := cr.calls.Load(); c > 3 {
		t.Errorf("%d recvmmsg calls in all", c)
	}
	// RecvFD, for sockets outside the netpoller, reports EAGAIN instead.
	if n, errno := rb.RecvFD(rx.fd()); n != 0 || errno != syscall.EAGAIN {
		t.Errorf("RecvFD on an empty socket: %d, %v", n, errno)
	}
	// A closed socket ends the wait with an error.
	go func() { time.Sleep(20 * time.Millisecond); rx.Close() }()
	if _, _, err := rb.Recv(cr); err == nil {
		t.Error("Recv on a closed socket returned no error")
	}
}

// TestSendWaitsInPoller: a full send buffer (EAGAIN) parks Send in the
// netpoller until there is room. Loopback UDP never fills up, so the
// socket is one end of a connected AF_UNIX datagram pair, whose peer
// queue does; a zero name length sends to the connected peer.
func TestSendWaitsInPoller(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skip("socketpair:", err)
	}
	f := os.NewFile(uintptr(fds[0]), "tx")
	c, err := net.FileConn(f) // a dup in the netpoller
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer unix.Close(fds[1])
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	cw := &counting{rc: rc}
	p := make([]byte, 100)
	var none Sockaddr
	b := NewSendBatch(1)
	filled := 0
	for ; filled < 10000; filled++ {
		b.Add(p, &none, 0, false)
		var e syscall.Errno
		_ = rc.Control(func(fd uintptr) {
			if !b.sendmmsg(fd) {
				e = syscall.EAGAIN
			}
		})
		b.Reset()
		if e == syscall.EAGAIN {
			break
		}
	}
	if filled == 10000 {
		t.Skip("the socket never filled")
	}
	b.Add(p, &none, 0, false)
	done := make(chan SendResult)
	go func() {
		res, _ := b.Send(cw)
		done <- res
	}()
	parked(t, cw, done, "Send while the socket is full")
	buf := make([]byte, 200)
	for { // make room
		if _, err := unix.Read(fds[1], buf); err != nil {
			break
		}
	}
	select {
	case res := <-done:
		if res.Messages != 1 || res.Dropped != 0 {
			t.Errorf("%+v, want the message sent", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send did not wake up when there was room")
	}
	if n := cw.calls.Load(); n > 3 {
		t.Errorf("%d sendmmsg calls in all", n)
	}
}

// TestZeroAllocs: a steady-state send (with GSO grouping) and receive
// allocate nothing.
func TestZeroAllocs(t *testing.T) {
	rx, tx := listen(t), listen(t)
	var to Sockaddr
	nlen := to.Set(rx.ap, false)
	payload := make([]byte, 1200)
	b := NewSendBatch(16)
	rb := NewRecvBatch(16, 2048, 64)
	round := func() {
		for range 10 {
			b.Add(payload, &to, nlen, true)
		}
		b.Add(payload[:500], &to, nlen, true)
		if _, err := b.Send(tx.rc); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 11; {
			n, errno, err := rb.Recv(rx.rc)
			if err != nil || errno != 0 {
				t.Fatal(err, errno)
			}
			got += n
		}
	}
	round()
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Errorf("%v allocations per send and receive, want 0", a)
	}
	fd := rx.fd()
	if a := testing.AllocsPerRun(200, func() { rb.RecvFD(fd) }); a != 0 {
		t.Errorf("%v allocations per RecvFD, want 0", a)
	}
	var sa Sockaddr
	ap := rx.ap
	if a := testing.AllocsPerRun(200, func() { sa.Set(ap, true); sa.AddrPort() }); a != 0 {
		t.Errorf("%v allocations per Sockaddr round trip, want 0", a)
	}
}

// TestSendClosed: a closed socket ends Send with an error and counts what
// it did not send.
func TestSendClosed(t *testing.T) {
	rx, tx := listen(t), listen(t)
	tx.Close()
	var to Sockaddr
	nlen := to.Set(rx.ap, false)
	b := NewSendBatch(4)
	b.Add(make([]byte, 10), &to, nlen, true)
	b.Add(make([]byte, 10), &to, nlen, false)
	res, err := b.Send(tx.rc)
	if err == nil || res.Dropped != 2 || res.Datagrams != 0 {
		t.Errorf("%+v, %v; want an error and 2 dropped", res, err)
	}
}

// BenchmarkAdd is the per-datagram cost of building a batch: ten viewers'
// frames of ten 1,228-byte packets and a short tail, grouped for GSO.
// One op is one datagram.
func BenchmarkAdd(b *testing.B) {
	var to [10]Sockaddr
	var nlen uint32
	for v := range to {
		nlen = to[v].Set(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(v)}), 5004), false)
	}
	p := make([]byte, 1228)
	sb := NewSendBatch(110)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if sb.Len() == sb.Cap() {
			sb.Reset()
		}
		k := sb.Len()
		n := len(p)
		if k%11 == 10 {
			n = 300
		}
		sb.Add(p[:n], &to[k/11], nlen, k%11 != 0)
	}
}
