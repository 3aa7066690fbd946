package web

import (
	"bufio"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/auth"
)

func TestClientFromHeaders(t *testing.T) {
	ps, err := parseProxies([]string{"10.0.0.0/8", "127.0.0.1", "2001:db8:ffff::/48"})
	if err != nil {
		t.Fatal(err)
	}
	const proxy, stranger = "10.0.0.2", "203.0.113.50"
	for _, tc := range []struct {
		name    string
		peer    string
		headers map[string][]string
		want    string
		fwd     bool
	}{
		{"no headers", proxy, nil, proxy, false},
		{"untrusted peer: headers ignored", stranger, map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, stranger, true},
		{"one hop", proxy, map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "198.51.100.1", true},
		{"client's own spoofed entries are left of the real one", proxy,
			map[string][]string{"X-Forwarded-For": {"127.0.0.1, 10.9.9.9, 198.51.100.1"}}, "198.51.100.1", true},
		{"chain of trusted proxies", proxy, map[string][]string{"X-Forwarded-For": {"198.51.100.1, 10.1.1.1", "10.2.2.2"}}, "198.51.100.1", true},
		{"every hop trusted: the left-most", proxy, map[string][]string{"X-Forwarded-For": {"127.0.0.1"}}, "127.0.0.1", true},
		{"garbage written by a trusted hop stops at it", proxy, map[string][]string{"X-Forwarded-For": {"198.51.100.1, junk, 10.1.1.1"}}, "10.1.1.1", true},
		{"port and brackets", proxy, map[string][]string{"X-Forwarded-For": {"[2001:db8::9]:443"}}, "2001:db8::9", true},
		{"mapped IPv4", proxy, map[string][]string{"X-Forwarded-For": {"::ffff:198.51.100.1"}}, "198.51.100.1", true},
		{"Forwarded", proxy, map[string][]string{"Forwarded": {`for=198.51.100.1;proto=https, for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17", true},
		{"Forwarded, case and quoted comma", proxy, map[string][]string{"Forwarded": {`For="198.51.100.1";by="a,b"`}}, "198.51.100.1", true},
		{"Forwarded unknown", proxy, map[string][]string{"Forwarded": {"for=198.51.100.1, for=unknown"}}, proxy, true},
		{"Forwarded element without for", proxy, map[string][]string{"Forwarded": {"for=198.51.100.1, proto=http"}}, proxy, true},
		{"X-Forwarded-For wins over a passed-through Forwarded", proxy,
			map[string][]string{"X-Forwarded-For": {"198.51.100.1"}, "Forwarded": {"for=127.0.0.1"}}, "198.51.100.1", true},
		{"X-Real-IP only marks the request", proxy, map[string][]string{"X-Real-Ip": {"198.51.100.1"}}, proxy, true},
		{"IPv6 proxy network", "2001:db8:ffff::5", map[string][]string{"X-Forwarded-For": {"2001:db8:1::1"}}, "2001:db8:1::1", true},
	} {
		h := http.Header(tc.headers)
		got := ps.client(netip.MustParseAddr(tc.peer), h)
		if got.Addr.String() != tc.want || got.Forwarded != tc.fwd {
			t.Errorf("%s: got %s forwarded=%v, want %s forwarded=%v", tc.name, got.Addr, got.Forwarded, tc.want, tc.fwd)
		}
	}
	if _, err := parseProxies([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad network must be refused")
	}
	// Without trusted proxies, nothing is taken from headers.
	var none proxies
	if got := none.client(netip.MustParseAddr("127.0.0.1"), http.Header{"X-Forwarded-For": {"198.51.100.1"}}); got.Addr.String() != "127.0.0.1" || !got.Forwarded {
		t.Errorf("no trusted proxies: %+v", got)
	}
}

// The handler behind the listener sees the client the trusted proxy names,
// and only that proxy's word counts.
func TestForwardedForOverSockets(t *testing.T) {
	if !canBind("127.0.0.2") {
		t.Skip("127.0.0.2 is not usable as a source address here")
	}
	s := start(t, Config{TrustedProxies: []string{"127.0.0.1"}})
	xff := "X-Forwarded-For: 198.51.100.1, 203.0.113.9\r\n"
	if got := bodyOf(get(t, dialFrom(t, s, "127.0.0.1"), "/who", xff)); got != "remote=203.0.113.9 addr=203.0.113.9 forwarded=true" {
		t.Errorf("through the trusted proxy: %s", got)
	}
	got := bodyOf(get(t, dialFrom(t, s, "127.0.0.2"), "/who", xff))
	if !strings.HasPrefix(got, "remote=127.0.0.2:") || !strings.HasSuffix(got, " addr=127.0.0.2 forwarded=true") {
		t.Errorf("from an untrusted peer the header must be ignored: %s", got)
	}
	if got := bodyOf(get(t, dialFrom(t, s, "127.0.0.1"), "/who", "")); !strings.HasSuffix(got, " addr=127.0.0.1 forwarded=false") {
		t.Errorf("direct: %s", got)
	}
}

type noPaths struct{}

func (noPaths) APIPaths() []api.Path       { return nil }
func (noPaths) KickPublisher(string) bool  { return true }
func (noPaths) APISessions() []api.Session { return nil }
func (noPaths) KickSession(id string) bool { return true }

func apiServer(t *testing.T, trusted []string) *Server {
	policy := auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})
	t.Cleanup(policy.Close)
	return start(t, Config{TrustedProxies: trusted, APIPrefix: api.Prefix,
		API:    api.Handler(api.Config{Paths: noPaths{}, Sessions: noPaths{}, Authorizer: policy}),
		Player: http.NotFoundHandler()})
}

// With api.token empty the API answers this host only, and a request a
// proxy on this host forwards is not from this host: the Caddy setup in
// deploy/ must not open the API to the world, whether or not the proxy is
// listed as trusted.
func TestForwardedRequestNeverLoopbackForAPI(t *testing.T) {
	for _, trusted := range [][]string{nil, {"127.0.0.1"}} {
		s := apiServer(t, trusted)
		if resp := get(t, dialFrom(t, s, ""), "/v1/paths", ""); resp.StatusCode != 200 {
			t.Fatalf("trusted=%v: direct loopback client: %d %s", trusted, resp.StatusCode, bodyOf(resp))
		}
		for _, hdr := range []string{
			"X-Forwarded-For: 203.0.113.9\r\n",
			"X-Forwarded-For: 127.0.0.1\r\n", // claims loopback
			"Forwarded: for=127.0.0.1\r\n",
			"X-Real-IP: 127.0.0.1\r\n",
		} {
			if resp := get(t, dialFrom(t, s, ""), "/v1/paths", hdr); resp.StatusCode != http.StatusForbidden {
				t.Errorf("trusted=%v, %q: %d, want 403", trusted, strings.TrimSpace(hdr), resp.StatusCode)
			}
			c := dialFrom(t, s, "")
			resp := roundTrip(t, c, bufio.NewReader(c), "DELETE /v1/publishers/live/cam1 HTTP/1.1\r\nHost: localhost\r\n"+hdr+"\r\n")
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("trusted=%v, %q: kick publisher: %d, want 403", trusted, strings.TrimSpace(hdr), resp.StatusCode)
			}
		}
	}
}

// FuzzClient: forwarding headers are client input; whatever they hold, the
// derived client is the peer or an address a header actually named.
func FuzzClient(f *testing.F) {
	for _, s := range []string{"198.51.100.1, 10.1.1.1", `for="[2001:db8:cafe::17]:4711";by="a,b"`, "for=unknown", `for="\"`, ",,,", "[::1]:1"} {
		f.Add(s, s)
	}
	ps, _ := parseProxies([]string{"10.0.0.0/8"})
	peer := netip.MustParseAddr("10.0.0.2")
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		h := http.Header{}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		h.Set("Forwarded", fwd)
		c := ps.client(peer, h)
		if !c.Forwarded || !c.Addr.IsValid() {
			t.Fatalf("%+v", c)
		}
		named := append(forwardedForHops(h.Values("X-Forwarded-For")), forwardedHops(h.Values("Forwarded"))...)
		if c.Addr != peer && !slices.Contains(named, c.Addr) {
			t.Fatalf("client %s named by no header (xff %q, forwarded %q)", c.Addr, xff, fwd)
		}
	})
}
