package testkit

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SRTListener is ffmpeg serving a stream as an SRT listener: the stand-in
// for an origin that a caller (an edge) reads from. ffmpeg starts encoding
// when the first caller connects and exits when it leaves.
type SRTListener struct {
	*Process
	Port int
}

// Addr is the listener's 127.0.0.1:PORT.
func (l *SRTListener) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)) }

// StartSRTListener runs ffmpeg with args (input and encoder options)
// writing MPEG-TS to srt://127.0.0.1:PORT?mode=listener, and returns once
// the UDP port is bound, so a caller's first attempt finds it. port 0
// picks a free one; a given port (a restarted origin) is retried while
// the previous listener's socket lingers. The query adds SRT options,
// e.g. "passphrase=…".
func StartSRTListener(t testing.TB, port int, query string, args ...string) *SRTListener {
	t.Helper()
	for try := 0; ; try++ {
		p := port
		if p == 0 {
			p = freeUDPPort(t)
		}
		url := fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&pkt_size=1316", p)
		if query != "" {
			url += "&" + query
		}
		proc := StartFFmpeg(t, append(append([]string{}, args...), "-f", "mpegts", url)...)
		if waitBound(t, proc, p) {
			return &SRTListener{Process: proc, Port: p}
		}
		// ffmpeg could not bind: the port was taken since it was picked,
		// or a restarted listener's old socket is still closing.
		if try == 20 {
			t.Fatalf("ffmpeg could not listen on udp 127.0.0.1:%d:\n%s", p, proc.Log.String())
		}
	}
}

// waitBound waits until UDP port p is bound (true) or proc exits (false).
func waitBound(t testing.TB, proc *Process, p int) bool {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !udpBound(t, p) {
		select {
		case <-tick.C:
		case <-proc.done:
			return false
		case <-deadline.C:
			t.Fatalf("ffmpeg did not bind udp 127.0.0.1:%d within 10 s:\n%s", p, proc.Log.String())
		}
	}
	return true
}

// freeUDPPort asks the kernel for a free loopback UDP port. Another
// process may take it before ffmpeg binds; StartSRTListener then retries.
func freeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// udpBound reports whether some socket is bound to UDP port p, from
// /proc/net/udp (ffmpeg says nothing when its listener is up).
func udpBound(t testing.TB, p int) bool {
	t.Helper()
	want := fmt.Sprintf(":%04X", p)
	for _, file := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 2 && strings.HasSuffix(fields[1], want) {
				f.Close()
				return true
			}
		}
		f.Close()
	}
	return false
}
