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
