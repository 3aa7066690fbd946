package player

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

var cspNonce = regexp.MustCompile(`'nonce-([A-Za-z0-9_-]+)'`)

func serve(t *testing.T, p *Player, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func TestPageHeadersAndNonce(t *testing.T) {
	p := New(Config{})
	rec := serve(t, p, http.MethodGet, "/live/cam1?token=secret")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /live/cam1: status %d, body %q", rec.Code, rec.Body.String())
	}
	h := rec.Header()
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	body := rec.Body.String()
	if got := h.Get("Content-Length"); got != fmt.Sprint(len(body)) {
		t.Errorf("Content-Length = %q, body has %d bytes", got, len(body))
	}
	csp := h.Get("Content-Security-Policy")
	m := cspNonce.FindAllStringSubmatch(csp, -1)
	if len(m) != 2 || m[0][1] != m[1][1] || len(m[0][1]) < 22 {
		t.Fatalf("CSP %q: want the same nonce of >= 128 bits for script-src and style-src", csp)
	}
	nonce := m[0][1]
	for _, d := range []string{"default-src 'self'", "script-src 'self' 'nonce-", "style-src 'self' 'nonce-", "connect-src 'self'", "object-src 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q must rely on the nonce, not unsafe-*", csp)
	}
	// Exactly one script and one style element, both carrying the nonce:
	// any other inline block would be blocked by the browser.
	if n := strings.Count(body, "<script"); n != 1 || !strings.Contains(body, `<script nonce="`+nonce+`">`) {
		t.Errorf("want one <script nonce=%q>, found %d <script tags", nonce, n)
	}
	if n := strings.Count(body, "<style"); n != 1 || !strings.Contains(body, `<style nonce="`+nonce+`">`) {
		t.Errorf("want one <style nonce=%q>, found %d <style tags", nonce, n)
	}
	if strings.Contains(body, " style=") {
		t.Error("inline style attributes are blocked by the nonce-only style-src")
	}
	for _, want := range []string{
		"<title>live/cam1 · srtwhep</title>",
		`<video id="v" autoplay muted playsinline>`,
		// Hidden until an answer shows the stream has audio.
		`<button id="unmute" type="button" hidden>`, `id="statsbtn"`, `id="status"`,
		"window.srtwhepStats = collect",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "secret") {
		t.Error("the token from the query string must not be rendered into the page")
	}

	again := serve(t, p, http.MethodGet, "/live/cam1")
	if n := cspNonce.FindStringSubmatch(again.Header().Get("Content-Security-Policy")); n == nil || n[1] == nonce {
		t.Errorf("second response reused nonce %q", nonce)
	}
}

func TestTitleAndPathAreEscaped(t *testing.T) {
	p := New(Config{Title: `</title><script>alert("x")</script>&`})
	rec := serve(t, p, http.MethodGet, "/a.b/c_d~e-f/9")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	if strings.Contains(body, `<script>alert`) {
		t.Fatal("Config.Title reached the page unescaped")
	}
	want := "<title>a.b/c_d~e-f/9 · &lt;/title&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;</title>"
	if !strings.Contains(body, want) {
		t.Errorf("page lacks escaped title %q", want)
	}
}

func TestNoExternalReferences(t *testing.T) {
	body := serve(t, New(Config{}), http.MethodGet, "/live/cam1").Body.String()
	for _, bad := range []string{"http://", "https://", " src=", "@import", "url(", `rel="stylesheet"`, "<iframe", "<img"} {
		if strings.Contains(body, bad) {
			i := strings.Index(body, bad)
			t.Errorf("page contains %q near %q: it must load nothing from elsewhere", bad, body[max(0, i-40):min(len(body), i+40)])
		}
	}
}

func TestEmbeddedAssetsCannotBreakOut(t *testing.T) {
	// template.JS and template.CSS are inserted verbatim, so a closing tag in
	// them would end the element early and let the rest be parsed as HTML.
	if strings.Contains(strings.ToLower(scriptSrc), "</script") || strings.Contains(strings.ToLower(scriptSrc), "<!--") {
		t.Error("player.js/whep.js contain </script or <!--")
	}
	if strings.Contains(strings.ToLower(styleSrc), "</style") {
		t.Error("player.css contains </style")
	}
}

func TestBadPathsAre404(t *testing.T) {
	p := New(Config{})
	for _, target := range []string{
		"/", "/a/../b", "/..", "/a/./b", "/.", "/x%00", "/a//b", "/a/", "//a",
		"/a%20b", "/a<b>", "/caf%C3%A9", "/a%2F..%2Fb/..", "/live/cam1/whep", "/" + strings.Repeat("a", maxPathLen+1),
	} {
		rec := serve(t, p, http.MethodGet, target)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, rec.Code)
			continue
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q, want text/plain", target, ct)
		}
		if strings.ContainsAny(rec.Body.String(), "<>") && strings.Contains(target, "<") {
			t.Errorf("GET %s: 404 body echoes markup", target)
		}
	}
	for _, target := range []string{"/a", "/live/cam1", "/A-Z_a~z.0-9/x/y/z", "/whep/x", "/" + strings.Repeat("a", maxPathLen)} {
		if rec := serve(t, p, http.MethodGet, target); rec.Code != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", target, rec.Code)
		}
	}
}

func TestOtherMethodsAre405(t *testing.T) {
	p := New(Config{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch} {
		rec := serve(t, p, m, "/live/cam1")
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: status %d Allow %q, want 405 with Allow: GET, HEAD", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

// TestOverTheWire checks HEAD and the raw-path cases through a real
// net/http server, where no client library gets to clean the path first.
func TestOverTheWire(t *testing.T) {
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	client := srv.Client()

	get, err := client.Get(srv.URL + "/live/cam1")
	if err != nil {
		t.Fatal(err)
	}
	getBody, _ := io.ReadAll(get.Body)
	get.Body.Close()

	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/live/cam1", nil)
	head, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	headBody, _ := io.ReadAll(head.Body)
	head.Body.Close()
	if head.StatusCode != http.StatusOK || len(headBody) != 0 {
		t.Fatalf("HEAD: status %d, %d body bytes; want 200 and none", head.StatusCode, len(headBody))
	}
	if head.Header.Get("Content-Type") != "text/html; charset=utf-8" || head.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD headers %v lack the page's Content-Type or CSP", head.Header)
	}
	if head.ContentLength != int64(len(getBody)) {
		t.Errorf("HEAD Content-Length %d, GET body %d bytes", head.ContentLength, len(getBody))
	}

	for _, raw := range []string{"/a/../b", "/x%00", "/"} {
		if code := rawGet(t, srv.Listener.Addr().String(), raw); code != http.StatusNotFound {
			t.Errorf("raw GET %s: status %d, want 404", raw, code)
		}
	}
}

// rawGet sends the request line byte for byte and returns the status code.
func rawGet(t *testing.T, addr, target string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("raw GET %s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func FuzzStreamPath(f *testing.F) {
	for _, s := range []string{"/live/cam1", "/", "/a/../b", "/x\x00", "/a//b", "/a/whep", "/~.-_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		path, ok := streamPath(in)
		if !ok {
			return
		}
		if "/"+path != in || len(path) > maxPathLen || strings.HasSuffix(path, "/whep") || path == "whep" {
			t.Fatalf("streamPath(%q) = %q", in, path)
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.Trim(seg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-") != "" {
				t.Fatalf("streamPath(%q) accepted segment %q", in, seg)
			}
		}
	})
}

// The page carries the server's ICE servers, so the browser can offer at
// once instead of asking the endpoint first.
func TestICEServersEmbedded(t *testing.T) {
	p := New(Config{ICEServers: []ICEServer{{URLs: []string{"stun:stun.example.org:3478"}}, {URLs: []string{"turn:t.example.org"}, Username: "u\"<x", Credential: "c"}}})
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/live/cam1", nil))
	body := rec.Body.String()
	want := `<meta name="srtwhep-ice-servers" content="[{&#34;urls&#34;:[&#34;stun:stun.example.org:3478&#34;]},{&#34;urls&#34;:[&#34;turn:t.example.org&#34;],&#34;username&#34;:&#34;u\&#34;\u003cx&#34;,&#34;credential&#34;:&#34;c&#34;}]">`
	if !strings.Contains(body, want) {
		t.Fatalf("ICE servers not embedded as escaped JSON; page head:\n%s", body[:min(len(body), 600)])
	}
}

// With ICE servers that carry credentials, the page (served to anyone)
// carries none: the script then asks the endpoint, which lists them only
// to a viewer it lets watch (the script's side: TestPagePlayback).
func TestICEServersFromEndpoint(t *testing.T) {
	p := New(Config{ICEServers: []ICEServer{{URLs: []string{"stun:stun.example.org:3478"}}}, ICEFromEndpoint: true})
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/live/cam1", nil))
	if body := rec.Body.String(); rec.Code != 200 || strings.Contains(body, `<meta name="srtwhep-ice-servers"`) {
		t.Fatalf("%d: the page still carries an ICE server list; head:\n%s", rec.Code, body[:min(len(body), 600)])
	}
}

// With http.publicURL the session URL names the server that holds the
// session, another origin than the load balancer's the page came from:
// the page may connect to any origin of that scheme, and only then.
func TestConnectSrcWithPublicURL(t *testing.T) {
	connectSrc := regexp.MustCompile(`connect-src ([^;]*);`)
	for _, c := range []struct{ publicURL, want string }{
		{"", "'self'"},
		{"https://edge1.example.com", "'self' https:"},
		{"http://10.0.0.7:8889", "'self' http:"},
	} {
		rec := serve(t, New(Config{PublicURL: c.publicURL}), http.MethodGet, "/live/cam1")
		m := connectSrc.FindStringSubmatch(rec.Header().Get("Content-Security-Policy"))
		if m == nil || m[1] != c.want {
			t.Errorf("publicURL %q: CSP %q, want connect-src %s", c.publicURL, rec.Header().Get("Content-Security-Policy"), c.want)
		}
	}
}
