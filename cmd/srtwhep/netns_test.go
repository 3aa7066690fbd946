package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

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
	args := append([]string{"-hide_banner", "-loglevel", "warning", "-nostdin"}, x264Args("1280x720")...)
	args = append(args, "-f", "mpegts", srv.SRTURL("publish:"+path))
	testkit.StartProcess(t, "ffmpeg", ns.command("ffmpeg", args...))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path="+path)
}
