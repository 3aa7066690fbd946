package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// The NAT topology, after a Docker host on a VPS:
//
//	cli 10.211.2.2 ──c0/r0── 10.211.2.1 rtr 10.211.1.1 ──r1/s0── 10.211.1.2 srv
//	(viewer behind its      ("docker host": public IP,          ("container")
//	 own stateful NAT)        publishes the ports with DNAT)
const (
	natPublicIP    = "10.211.2.1"
	natContainerIP = "10.211.1.2"
	natMediaPort   = "8189"
	natHTTPPort    = "8889"
)

// natViewerEnv carries the WHEP URL to the viewer child process; its
// presence is what makes TestNATViewerHelper act.
const natViewerEnv = "NATVIEWER_URL"

// natViewerResult is what the viewer child prints on its last line.
type natViewerResult struct {
	Connected bool   `json:"connected"`
	Err       string `json:"err,omitempty"`
	Packets   uint64 `json:"packets"`
	Frames    uint64 `json:"frames"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

// TestNAT reproduces a peer's bug (a server in a Docker container, behind
// the host's port publishing, advertises the container's private address
// and nobody outside can play) and shows the fix: with webrtc.publicIPs
// media flows over UDP, and over ICE-TCP when the viewer's UDP is blocked.
// The server runs the real binary with its default listen addresses, as
// the Docker image does; each case gets a fresh topology and server.
func TestNAT(t *testing.T) {
	t.Parallel()
	requireNetns(t, "iptables")
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	for _, c := range []struct {
		name      string
		publicIPs string
		blockUDP  bool
		wantProto string // "" = must not connect
	}{
		{name: "no_publicIPs_fails", publicIPs: "[]"},
		{name: "publicIPs_udp", publicIPs: "[" + natPublicIP + "]", wantProto: "udp"},
		{name: "publicIPs_udp_blocked_tcp", publicIPs: "[" + natPublicIP + "]", blockUDP: true, wantProto: "tcp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case has namespaces of its own (named after it), so
			// the fixed addresses and ports never meet.
			t.Parallel()
			cli, srv := natTopology(t)
			if c.blockUDP {
				cli.exec(t, "iptables", "-A", "OUTPUT", "-p", "udp", "-j", "DROP")
			}
			server := serverInNetns(t, bin, srv, fmt.Sprintf(`srt:
  listen: "127.0.0.1:8890"
http:
  listen: ":%s"
webrtc:
  udpPort: %s
  tcpPort: %s
  publicIPs: %s
  handshakeTimeout: 4s
metrics:
  listen: ""
`, natHTTPPort, natMediaPort, natMediaPort, c.publicIPs))
			publishInNetns(t, srv, server, "live/cam1")

			res := runNATViewer(t, cli, "http://"+natPublicIP+":"+natHTTPPort+"/live/cam1/whep")
			if c.wantProto == "" {
				if res.Connected || res.Packets > 0 {
					t.Fatalf("viewer connected without publicIPs: %+v; the private container address must be unreachable here", res)
				}
				// The server gives up on its own: the viewer's checks go to
				// the unreachable private address, so none ever arrives and
				// the ICE start timeout frees the handshake slot.
				server.WaitLog(t, 10*time.Second, "viewer closed", "no ICE check from the viewer")
				return
			}
			if !res.Connected || res.Packets == 0 || res.Frames == 0 || res.Width != 1280 || res.Height != 720 {
				t.Fatalf("viewer result %+v, want connected with 1280x720 frames", res)
			}
			// The client's firewall counters say which transport carried the
			// media: the other one may only have seen ICE checks.
			got, other := inboundBytes(t, cli, c.wantProto), inboundBytes(t, cli, map[string]string{"udp": "tcp", "tcp": "udp"}[c.wantProto])
			t.Logf("viewer: %+v; bytes from the media port: %s %d, other %d", res, c.wantProto, got, other)
			// RTP packets of a 720p stream average well over 500 bytes.
			if got < res.Packets*500 || other > got/10 {
				t.Errorf("media did not flow over %s: %d %s bytes vs %d on the other transport, %d RTP packets",
					c.wantProto, got, c.wantProto, other, res.Packets)
			}
		})
	}
}

// natTopology builds the three namespaces with Docker's port publishing in
// the router and returns the client and the server ("container") ones.
func natTopology(t *testing.T) (cli, srv *netns) {
	t.Helper()
	cli, rtr, srv := newNetns(t, "cli"), newNetns(t, "rtr"), newNetns(t, "srv")
	link(t, cli, "c0", "10.211.2.2/24", rtr, "r0", natPublicIP+"/24")
	link(t, srv, "s0", natContainerIP+"/24", rtr, "r1", "10.211.1.1/24")
	cli.ip(t, "route", "add", "default", "via", natPublicIP)
	srv.ip(t, "route", "add", "default", "via", "10.211.1.1")
	rtr.exec(t, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")

	ipt := func(ns *netns, rule string) {
		t.Helper()
		ns.exec(t, append([]string{"iptables"}, strings.Fields(rule)...)...)
	}
	// What `docker run -p 8889:8889 -p 8189:8189/udp -p 8189:8189/tcp` sets
	// up: DNAT of the published ports on the host's address, forwarding
	// allowed only to those ports, the container's own traffic masqueraded.
	for _, p := range []string{"udp " + natMediaPort, "tcp " + natMediaPort, "tcp " + natHTTPPort} {
		proto, port := strings.Fields(p)[0], strings.Fields(p)[1]
		ipt(rtr, fmt.Sprintf("-t nat -A PREROUTING -d %s -p %s --dport %s -j DNAT --to-destination %s:%s",
			natPublicIP, proto, port, natContainerIP, port))
		ipt(rtr, fmt.Sprintf("-A FORWARD -i r0 -o r1 -d %s -p %s --dport %s -j ACCEPT", natContainerIP, proto, port))
	}
	// The internet does not route to a container's private address: only
	// traffic for the public address reaches this host from outside. (The
	// raw table runs before DNAT, so published ports are unaffected.)
	ipt(rtr, "-t raw -A PREROUTING -i r0 -d 10.211.1.0/24 -j DROP")
	ipt(rtr, "-t nat -A POSTROUTING -s 10.211.1.0/24 -o r0 -j MASQUERADE")
	ipt(rtr, "-A FORWARD -o r1 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT")
	ipt(rtr, "-A FORWARD -i r1 -o r0 -j ACCEPT")
	ipt(rtr, "-A FORWARD -i r0 -o r1 -j DROP")

	// Counters (no target) of what reaches the viewer from the media port.
	for _, proto := range []string{"udp", "tcp"} {
		ipt(cli, fmt.Sprintf("-A INPUT -s %s -p %s --sport %s", natPublicIP, proto, natMediaPort))
	}
	// The viewer sits behind its own NAT: nothing gets in unless it asked.
	ipt(cli, "-A INPUT -i lo -j ACCEPT")
	ipt(cli, "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT")
	ipt(cli, "-A INPUT -j DROP")
	return cli, srv
}

// iptCounter reads the byte column: the server sends a frame's packets to
// one viewer as one UDP GSO message, which netfilter counts as one packet.
var iptCounter = regexp.MustCompile(`^\s*\d+\s+(\d+)\s.*\s(udp|tcp) spt:` + natMediaPort)

// inboundBytes reads the client's INPUT byte counter for proto.
func inboundBytes(t *testing.T, cli *netns, proto string) uint64 {
	t.Helper()
	out := cli.exec(t, "iptables", "-nvxL", "INPUT")
	for _, line := range strings.Split(out, "\n") {
		if m := iptCounter.FindStringSubmatch(line); m != nil && m[2] == proto {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			return n
		}
	}
	t.Fatalf("no %s counter in the client's INPUT chain:\n%s", proto, out)
	return 0
}

// runNATViewer runs one real pion WHEP viewer inside cli: the test binary
// again, running only TestNATViewerHelper.
func runNATViewer(t *testing.T, cli *netns, url string) natViewerResult {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := cli.command(self, "-test.run=^TestNATViewerHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), natViewerEnv+"="+url)
	p := testkit.StartProcess(t, "viewer", cmd)
	_ = p.Wait(t, 30*time.Second) // the result line says what went wrong
	for _, line := range p.Log.Lines("NATVIEWER ") {
		var res natViewerResult
		if err := json.Unmarshal([]byte(line[strings.Index(line, "NATVIEWER ")+len("NATVIEWER "):]), &res); err == nil {
			return res
		}
	}
	t.Fatalf("viewer printed no result:\n%s", p.Log.String())
	return natViewerResult{}
}

// TestNATViewerHelper is the viewer process of TestNAT, which runs the test
// binary again inside its client namespace with NATVIEWER_URL set. Run
// directly it has nothing to do.
func TestNATViewerHelper(t *testing.T) {
	url := os.Getenv(natViewerEnv)
	if url == "" {
		t.Skip("helper process of TestNAT; it runs only when TestNAT starts it")
	}
	var res natViewerResult
	defer func() {
		b, _ := json.Marshal(res)
		fmt.Printf("NATVIEWER %s\n", b)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Its own transport, so no keep-alive connection outlives the test.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	// Every decoded picture wakes the wait for enough of them below.
	frame := make(chan struct{}, 1)
	sess, err := whepclient.Dial(ctx, url, whepclient.Options{
		Decode: true,
		OnAccessUnit: func(whepclient.AccessUnit) {
			select {
			case frame <- struct{}{}:
			default:
			}
		},
		HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		// Like a browser: UDP, and active ICE-TCP as the fallback (pion
		// offers UDP only by default).
		SettingEngine: func(se *webrtc.SettingEngine) {
			se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeTCP4})
		},
	})
	if err != nil {
		res.Err = err.Error()
		return
	}
	defer sess.Close()
	// A little longer than the server's 4 s handshake timeout.
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := sess.WaitConnected(wctx); err != nil {
		res.Err = err.Error()
		return
	}
	res.Connected = true
	// Up to 5 s for 30 decoded pictures; the parent judges the figures,
	// so running out of time here only ends the wait.
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		st := sess.Stats()
		res.Packets, res.Frames, res.Width, res.Height = st.Packets, st.Frames, st.Width, st.Height
		if st.Frames >= 30 && st.Width > 0 {
			return
		}
		select {
		case <-frame:
		case <-sess.Done():
		case <-deadline.C:
			return
		}
	}
}
