package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// The browser and NAT tests need real network separation: Chromium ignores
// loopback candidates, and a NAT cannot be shown on one loopback interface.
// They build small topologies of network namespaces joined by veth pairs;
// nothing in the root namespace is touched, and every namespace is deleted
// when the test ends, passed or failed.

// requireNetns fails (never skips) when the tools or privileges are missing.
func requireNetns(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("network namespace tests need root (ip netns add); run `make test` as root, as CI does")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: run `make test` (scripts/deps.sh test installs it) or `apt-get install -y iproute2 iptables chromium`", tool)
		}
	}
}

var nsUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// netns is one network namespace owned by a test.
type netns struct{ name string }

// newNetns creates a namespace named after the test, the pid and role, so
// parallel runs of the suite never collide, with its loopback up.
func newNetns(t *testing.T, role string) *netns {
	t.Helper()
	name := fmt.Sprintf("sw-%s-%d-%s", nsUnsafe.ReplaceAllString(t.Name(), "_"), os.Getpid(), role)
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	// A namespace left behind by a crashed earlier run with the same pid
	// would make `ip netns add` fail.
	_ = exec.Command("ip", "netns", "del", name).Run()
	mustRun(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	ns := &netns{name: name}
	ns.ip(t, "link", "set", "lo", "up")
	// IPv4 only: a fresh veth's IPv6 link-local address stays tentative
	// (duplicate address detection) for a second or two, and Chromium's
	// candidate gathering waits on such changes, which made time to
	// first frame swing by seconds. The topologies here are IPv4.
	ns.exec(t, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
	return ns
}

// ip runs `ip -n NS args...`.
func (ns *netns) ip(t *testing.T, args ...string) {
	t.Helper()
	mustRun(t, "ip", append([]string{"-n", ns.name}, args...)...)
}

// exec runs a command inside the namespace and fails the test on error.
func (ns *netns) exec(t *testing.T, args ...string) string {
	t.Helper()
	return mustRun(t, "ip", append([]string{"netns", "exec", ns.name}, args...)...)
}

// command prepares a long-running command inside the namespace. `ip netns
// exec` execs the command in place, so killing the returned process kills
// the command itself.
func (ns *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.name, name}, args...)...)
}

// link joins a and b with a veth pair created directly inside them (so the
// fixed interface names never meet in the root namespace) and sets the
// addresses, e.g. "10.210.0.1/24".
func link(t *testing.T, a *netns, aIf, aAddr string, b *netns, bIf, bAddr string) {
	t.Helper()
	a.ip(t, "link", "add", aIf, "type", "veth", "peer", "name", bIf, "netns", b.name)
	a.ip(t, "addr", "add", aAddr, "dev", aIf)
	b.ip(t, "addr", "add", bAddr, "dev", bIf)
	a.ip(t, "link", "set", aIf, "up")
	b.ip(t, "link", "set", bIf, "up")
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// serverInNetns runs the real binary inside ns with cfg, returning once it
// has written its ready file, that is once every listener is bound.
func serverInNetns(t *testing.T, bin string, ns *netns, cfg string) *testkit.Server {
	t.Helper()
	return testkit.StartServer(t, bin, cfg, "ip", "netns", "exec", ns.name)
}

// publishInNetns runs ffmpeg inside ns with the reference 720p30 stream
// (2 s GOP, no B-frames) to the server's SRT address, which must be
// reachable from ns, and waits until the server has parsed it.
func publishInNetns(t *testing.T, ns *netns, srv *testkit.Server, path string) {
	t.Helper()
	ffmpegInNetns(t, ns, "1280x720", srv.SRTURL("publish:"+path))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path="+path)
}

// ffmpegInNetns runs ffmpeg inside ns, encoding x264Args(size) into
// MPEG-TS at url, until it exits or the test ends.
func ffmpegInNetns(t *testing.T, ns *netns, size, url string) *testkit.Process {
	t.Helper()
	args := append([]string{"-hide_banner", "-loglevel", "warning", "-nostdin"}, x264Args(size)...)
	return testkit.StartProcess(t, "ffmpeg", ns.command("ffmpeg", append(args, "-f", "mpegts", url)...))
}

// listenUDPIn opens a UDP socket on 127.0.0.1:0 inside ns. A socket stays
// in the network namespace of the thread that created it, so one locked
// thread visits ns for the call and comes back before it is unlocked.
func listenUDPIn(t *testing.T, ns *netns) *net.UDPConn {
	t.Helper()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer home.Close()
	there, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	type result struct {
		conn *net.UDPConn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// home was opened on some thread of this process; every thread
		// of the test process is in the root namespace.
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			// Stuck in ns: exit locked so Go discards the thread.
			done <- result{c, fmt.Errorf("setns back: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		done <- result{c, err}
	}()
	r := <-done
	if r.err != nil {
		if r.conn != nil {
			r.conn.Close()
		}
		t.Fatalf("UDP socket inside netns %s: %v", ns.name, r.err)
	}
	return r.conn
}

// udpRelay forwards datagrams between one peer inside ns and to, an
// address of this (the root) namespace, and returns the port the peer
// sends to (on ns's 127.0.0.1). A publisher in ns thus reaches the
// in-process server without any change to the root namespace, and
// netfilter rules inside ns act on its packets in both directions.
func udpRelay(t *testing.T, ns *netns, to *net.UDPAddr) int {
	t.Helper()
	in := listenUDPIn(t, ns)
	out, err := net.DialUDP("udp4", nil, to)
	if err != nil {
		in.Close()
		t.Fatal(err)
	}
	var peer atomic.Pointer[net.UDPAddr]
	var wg sync.WaitGroup
	// forward copies until its socket is closed; other errors (an ICMP
	// error reported on a later read) lose one datagram, as on a network.
	forward := func(read func([]byte) (int, error), write func([]byte)) {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, err := read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				write(buf[:n])
			}
		}
	}
	wg.Add(2)
	go forward(func(b []byte) (int, error) {
		n, from, err := in.ReadFromUDP(b)
		if err == nil {
			peer.Store(from)
		}
		return n, err
	}, func(b []byte) { _, _ = out.Write(b) })
	go forward(out.Read, func(b []byte) {
		if p := peer.Load(); p != nil {
			_, _ = in.WriteToUDP(b, p)
		}
	})
	t.Cleanup(func() {
		in.Close()
		out.Close()
		wg.Wait()
	})
	return in.LocalAddr().(*net.UDPAddr).Port
}
