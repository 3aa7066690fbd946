package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/api"
	"golang.org/x/sys/unix"
)

// entryPoint is the one address viewers are given, as a cloud load
// balancer or a Kubernetes Service gives it: a round-robin reverse proxy
// over the edges' HTTP listeners whose health check is a TCP connect, so
// an edge whose port refuses connections is passed over. Its listener and
// its connections to the edges live in the servers' namespace.
type entryPoint struct {
	ns       *netns
	backends []string
	next     atomic.Uint32
	proxies  map[string]*httputil.ReverseProxy
	tr       *http.Transport

	mu     sync.Mutex
	routes []string
}

func startEntryPoint(t *testing.T, ns *netns, listen string, backends ...string) *entryPoint {
	t.Helper()
	ep := &entryPoint{ns: ns, backends: backends, proxies: map[string]*httputil.ReverseProxy{}}
	// A fresh connection per request: each request is balanced anew.
	ep.tr = &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return ep.dial(ctx, addr)
	}}
	for _, b := range backends {
		u := &url.URL{Scheme: "http", Host: b}
		ep.proxies[b] = &httputil.ReverseProxy{Transport: ep.tr, Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.SetXForwarded()
		}}
	}
	var ln net.Listener
	if err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp4", listen)
		return err
	}); err != nil {
		t.Fatalf("entry point listener: %v", err)
	}
	srv := &http.Server{Handler: ep, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
		ep.tr.CloseIdleConnections()
	})
	return ep
}

// dial connects to addr from inside the entry point's namespace.
func (ep *entryPoint) dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(ep.ns, func() (err error) {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp4", addr)
		return err
	})
	return c, err
}

func (ep *entryPoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := int(ep.next.Add(1))
	var skipped []string
	for k := range ep.backends {
		b := ep.backends[(start+k)%len(ep.backends)]
		c, err := ep.dial(r.Context(), b)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("skipped %s (%v)", b, err))
			continue
		}
		c.Close()
		ep.record(fmt.Sprintf("%s %s → %s %s", r.Method, r.URL.Path, b, strings.Join(skipped, ", ")))
		ep.proxies[b].ServeHTTP(w, r)
		return
	}
	ep.record(fmt.Sprintf("%s %s → 502 %s", r.Method, r.URL.Path, strings.Join(skipped, ", ")))
	http.Error(w, "no edge is up", http.StatusBadGateway)
}

// pointAt makes backend the first one the next request tries.
func (ep *entryPoint) pointAt(backend string) {
	for i, b := range ep.backends {
		if b == backend {
			ep.next.Store(uint32(i + len(ep.backends) - 1))
		}
	}
}

func (ep *entryPoint) record(route string) {
	ep.mu.Lock()
	ep.routes = append(ep.routes, time.Now().Format("15:04:05.000 ")+strings.TrimSpace(route))
	ep.mu.Unlock()
}

// log returns the WHEP requests the entry point routed (the page's
// script, icons and such left out).
func (ep *entryPoint) log() []string {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var out []string
	for _, r := range ep.routes {
		if strings.Contains(r, "/whep") {
			out = append(out, r)
		}
	}
	return out
}

// sessions asks a server's control API, from inside the namespace, for
// its viewer sessions.
func (ep *entryPoint) sessions(t *testing.T, srv *testkit.Server) []api.Session {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.APIURL("/v1/sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+failoverToken)
	resp, err := (&http.Client{Transport: ep.tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s/v1/sessions: %v", srv.Addrs.API, err)
	}
	defer resp.Body.Close()
	var out struct{ Sessions []api.Session }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/v1/sessions: %d, %v", srv.Addrs.API, resp.StatusCode, err)
	}
	return out.Sessions
}

// inNetns runs f on a thread that is inside ns for the call: the sockets
// f creates stay in ns for their whole life (see listenUDPIn).
func inNetns(ns *netns, f func() error) error {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer home.Close()
	there, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		return err
	}
	defer there.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			// Stuck in ns: exit locked so Go discards the thread.
			done <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// edgeViewerEnv carries the WHEP URL to the viewer child process of
// TestEdgeFailover; its presence is what makes TestEdgeFailoverViewerHelper
// act.
const edgeViewerEnv = "EDGEVIEWER_URL"

// failoverViewerResult is what the viewer child prints when it is told
// to stop: its stats and the pictures it got.
type failoverViewerResult struct {
	Err       string                  `json:"err,omitempty"`
	SeqGaps   uint64                  `json:"seqGaps"`
	BrokenAUs uint64                  `json:"brokenAUs"`
	Units     []whepclient.AccessUnit `json:"units"`
}

// startFailoverViewer runs one real pion WHEP viewer inside ns (where
// Chromium's namespace cannot be reached from the test process): the test
// binary again, running only TestEdgeFailoverViewerHelper.
func startFailoverViewer(t *testing.T, ns *netns, whepURL string) *testkit.Process {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := ns.command(self, "-test.run=^TestEdgeFailoverViewerHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), edgeViewerEnv+"="+whepURL)
	return testkit.StartProcess(t, "viewer", cmd)
}

// stopFailoverViewer asks the viewer child to stop (SIGTERM) and returns
// what it got.
func stopFailoverViewer(t *testing.T, p *testkit.Process) failoverViewerResult {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop the viewer: %v", err)
	}
	_ = p.Wait(t, 15*time.Second) // the result line says what went wrong
	for _, line := range p.Log.Lines("EDGEVIEWER result ") {
		var res failoverViewerResult
		if err := json.Unmarshal([]byte(line[strings.Index(line, "EDGEVIEWER result ")+len("EDGEVIEWER result "):]), &res); err == nil {
			return res
		}
	}
	t.Fatalf("viewer printed no result:\n%s", p.Log.String())
	return failoverViewerResult{}
}

// checkFailoverViewer asserts the child viewer started at an IDR, lost
// nothing and played at 30 fps.
func checkFailoverViewer(t *testing.T, name string, res failoverViewerResult) {
	t.Helper()
	if res.Err != "" {
		t.Fatalf("%s: %s", name, res.Err)
	}
	if len(res.Units) < 90 || !res.Units[0].IDR {
		t.Fatalf("%s: %d pictures (first an IDR: %v), want 90 or more from an IDR", name, len(res.Units), len(res.Units) > 0 && res.Units[0].IDR)
	}
	if res.SeqGaps != 0 || res.BrokenAUs != 0 {
		t.Errorf("%s disturbed: %d sequence gaps, %d broken access units", name, res.SeqGaps, res.BrokenAUs)
	}
	checkFullRateSince(t, name, res.Units)
	t.Logf("%s: %d pictures over %v, %.1f fps", name, len(res.Units),
		res.Units[len(res.Units)-1].Received.Sub(res.Units[0].Received).Round(time.Millisecond), liveFrameRate(res.Units))
}

// TestEdgeFailoverViewerHelper is the viewer process of TestEdgeFailover,
// which runs the test binary again inside its server namespace with
// EDGEVIEWER_URL set. It plays until SIGTERM and then prints its result.
// Run directly it has nothing to do.
func TestEdgeFailoverViewerHelper(t *testing.T) {
	whepURL := os.Getenv(edgeViewerEnv)
	if whepURL == "" {
		t.Skip("helper process of TestEdgeFailover; it runs only when TestEdgeFailover starts it")
	}
	stop, cancelStop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancelStop()
	var res failoverViewerResult
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		b, _ := json.Marshal(res)
		mu.Unlock()
		fmt.Printf("EDGEVIEWER result %s\n", b)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	sess, err := whepclient.Dial(ctx, whepURL, whepclient.Options{
		Decode:     true,
		HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		OnAccessUnit: func(au whepclient.AccessUnit) {
			au.NALUs = nil // the result carries what the checks read
			mu.Lock()
			res.Units = append(res.Units, au)
			mu.Unlock()
		},
	})
	if err != nil {
		res.Err = err.Error()
		return
	}
	defer sess.Close()
	if err := sess.WaitConnected(ctx); err != nil {
		res.Err = err.Error()
		return
	}
	fmt.Println("EDGEVIEWER connected")
	select {
	case <-stop.Done():
	case <-sess.Done():
		res.Err = fmt.Sprintf("session ended: %v", sess.Err())
	case <-time.After(2 * time.Minute):
		res.Err = "never told to stop"
	}
	st := sess.Stats()
	mu.Lock()
	res.SeqGaps, res.BrokenAUs = st.SeqGaps, st.BrokenAUs
	mu.Unlock()
}
