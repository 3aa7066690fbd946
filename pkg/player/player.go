// Package player serves the browser player: one self-contained HTML page per
// stream path that plays the path's WHEP endpoint ({page URL}/whep).
//
// The page carries its CSS and JavaScript inline and loads nothing else, so
// it works offline, behind any reverse-proxy prefix, and under a strict
// Content-Security-Policy whose nonce changes with every response.
package player

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	_ "embed"

	"github.com/srtwhep/srtwhep/pkg/pathname"
)

//go:embed page.html
var pageSrc string

//go:embed whep.js
var helpersSrc string

//go:embed liveness.js
var livenessSrc string

//go:embed events.js
var eventsSrc string

//go:embed quality.js
var qualitySrc string

//go:embed player.js
var mainSrc string

// scriptSrc is the page's one inline script: the files share a function
// scope so nothing but window.srtwhepStats leaks into the global object.
var scriptSrc = "(() => {\n\"use strict\";\n" + helpersSrc + "\n" + livenessSrc + "\n" + eventsSrc + "\n" + qualitySrc + "\n" + mainSrc + "})();\n"

//go:embed player.css
var styleSrc string

var pageTmpl = template.Must(template.New("page.html").Parse(pageSrc))

// maxPathLen bounds the stream path so a page request cannot make us render
// (and the browser POST) arbitrarily long URLs; no longer name could be
// published anyway.
const maxPathLen = pathname.MaxLen

// DefaultTitle is shown in the browser tab after the stream path when
// Config.Title is empty.
const DefaultTitle = "srtwhep"

// Config configures the player page.
type Config struct {
	// Title follows the stream path in the page title; "" means DefaultTitle.
	Title string
	// Logger receives one debug line per page served; nil discards.
	Logger *slog.Logger
	// ICEServers are written into the page, so it need not ask the WHEP
	// endpoint (an OPTIONS round trip) before it can make its offer.
	ICEServers []ICEServer
	// ICEFromEndpoint leaves the ICE servers out of the page: some have
	// credentials, which the page (served to anyone) must not carry, so
	// it asks the WHEP endpoint with OPTIONS and the viewer's token, and
	// the endpoint lists them only to a viewer it would let watch.
	ICEFromEndpoint bool
	// PublicURL is the server's http.publicURL. With it, session URLs are
	// absolute URLs of whichever server holds the session, which need not
	// be the origin the page came from (a load balancer's), so the page
	// may connect to any origin of PublicURL's scheme: it must reach its
	// session there to probe it and to DELETE it.
	PublicURL string
	// ReconnectURL is the server's http.reconnectURL: the page may connect
	// to its origin, where a reconnect event sends it.
	ReconnectURL string
}

// ICEServer is a STUN/TURN server in the form RTCPeerConnection takes.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// Player is an http.Handler serving the player page for any valid stream
// path. Mount it as the fallback behind the WHEP and API routes: it claims
// every GET/HEAD whose URL path looks like a stream path.
type Player struct {
	title   string
	log     *slog.Logger
	ice     string // JSON of Config.ICEServers; "" asks the endpoint
	connect string // the CSP connect-src sources
}

// New returns a Player. It is safe for concurrent use.
func New(cfg Config) *Player {
	servers := cfg.ICEServers
	if servers == nil {
		servers = []ICEServer{}
	}
	ice, _ := json.Marshal(servers) // plain strings: cannot fail
	p := &Player{title: cfg.Title, log: cfg.Logger, ice: string(ice), connect: "'self'"}
	if cfg.ICEFromEndpoint {
		p.ice = ""
	}
	// The sibling servers' origins are unknown here, so the scheme is
	// allowed: "https:" means any secure origin.
	if u, err := url.Parse(cfg.PublicURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
		p.connect += " " + u.Scheme + ":"
	}
	if u, err := url.Parse(cfg.ReconnectURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		p.connect += " " + u.Scheme + "://" + u.Host
	}
	if p.title == "" {
		p.title = DefaultTitle
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

type pageData struct {
	Path  string
	Title string
	Nonce string
	ICE   string
	CSS   template.CSS
	JS    template.JS
}

// ServeHTTP answers GET and HEAD /{path...} with the page for that path.
func (p *Player) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := streamPath(r.URL.Path)
	if !ok {
		plainError(w, http.StatusNotFound,
			"404 not found: a stream page is /PATH where PATH is one or more '/'-separated segments of A-Z a-z 0-9 . _ ~ - (not '.', '..' or a final 'whep')")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plainError(w, http.StatusMethodNotAllowed, "405 method not allowed: the player page answers GET and HEAD")
		return
	}
	nonce, err := newNonce()
	if err != nil {
		p.log.Error("player page: no randomness for the CSP nonce", "path", path, "remote", r.RemoteAddr, "err", err)
		plainError(w, http.StatusInternalServerError, "500 cannot create a CSP nonce")
		return
	}
	var buf bytes.Buffer
	err = pageTmpl.Execute(&buf, pageData{
		Path:  path,
		Title: p.title,
		Nonce: nonce,
		ICE:   p.ice,
		// Both are our own embedded files, checked by the tests never to
		// contain a closing </script> or </style>.
		CSS: template.CSS(styleSrc),
		JS:  template.JS(scriptSrc),
	})
	if err != nil {
		p.log.Error("player page: template failed", "path", path, "remote", r.RemoteAddr, "err", err)
		plainError(w, http.StatusInternalServerError, "500 cannot render the player page")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", csp(nonce, p.connect))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(buf.Bytes())
	}
	p.log.Debug("player page served", "path", path, "remote", r.RemoteAddr)
}

// csp allows the page's own inline script and style (by nonce) and network
// access to connect, its own origin unless Config.PublicURL says sessions
// live elsewhere: the WHEP endpoint is always {page}/whep. media-src covers
// the MediaStream the video element plays; img-src data: covers the empty
// favicon that stops a /favicon.ico request.
func csp(nonce, connect string) string {
	n := "'nonce-" + nonce + "'"
	return "default-src 'self'; script-src 'self' " + n + "; style-src 'self' " + n +
		"; connect-src " + connect + "; media-src 'self' blob: mediastream:; img-src 'self' data:" +
		"; object-src 'none'; base-uri 'none'; form-action 'none'"
}

func newNonce() (string, error) {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// streamPath turns a URL path into a stream path, or reports false when the
// URL cannot name one. The rules match the config's path names; a final
// "whep" segment is refused because {path}/whep is the WHEP endpoint itself.
func streamPath(urlPath string) (string, bool) {
	path, ok := strings.CutPrefix(urlPath, "/")
	if !ok || path == "" || len(path) > maxPathLen {
		return "", false
	}
	segs := strings.Split(path, "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return "", false
		}
		for i := 0; i < len(seg); i++ {
			if !pathByte(seg[i]) {
				return "", false
			}
		}
	}
	if segs[len(segs)-1] == "whep" {
		return "", false
	}
	return path, true
}

func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '~' || c == '-'
}

func plainError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}
