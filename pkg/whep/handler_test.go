package whep

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/turncred"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestPostRefusals(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	src.errs["live/full"] = fmt.Errorf("path %q: %w", "live/full", hub.ErrPathFull)
	src.errs["live/server"] = hub.ErrServerFull
	_, hs := startServer(t, src, func(c *Config) { c.MaxBodyBytes = 8 << 10 })

	good := testkit.Offer(t, testkit.OfferOptions{}).SDP
	vp := testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, PayloadType: 96},
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP9, ClockRate: 90000, SDPFmtpLine: "profile-id=0"}, PayloadType: 98},
	}}).SDP
	mode0 := testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "42e01f", 0)}}).SDP
	sendonly := testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "42e01f", 1)}, Direction: webrtc.RTPTransceiverDirectionSendonly}).SDP
	high := testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "f4001f", 1)}}).SDP

	cases := []struct {
		name, path, ctype, body string
		code                    int
		slug                    string
		want                    string // substring of the detail
		retryAfter              int    // seconds, 0: none
	}{
		{"wrong content type", "live/cam1", "text/plain", good, 415, probUnsupportedType, `Content-Type must be application/sdp, got "text/plain"`, 0},
		{"no content type", "live/cam1", "", good, 415, probUnsupportedType, "Content-Type must be application/sdp", 0},
		{"too large", "live/cam1", "application/sdp", strings.Repeat("v", 8<<10+1), 413, probTooLarge, "offer larger than 8192 bytes", 0},
		{"empty body", "live/cam1", "application/sdp", "", 400, probEmptyOffer, "the request body is empty; a WHEP POST needs an SDP offer", 0},
		{"blank body", "live/cam1", "application/sdp", "\r\n \r\n", 400, probEmptyOffer, "the request body is empty", 0},
		{"not SDP", "live/cam1", "application/sdp", `{"sdp":"v=0"}`, 400, probNotSDP, "the request body is not SDP (an SDP offer starts with v=0)", 0},
		{"malformed", "live/cam1", "application/sdp", "v=0\r\nhello", 400, probBadOffer, "malformed SDP offer: ", 0},
		{"no H.264", "live/cam1", "application/sdp", vp, 400, probNoH264, "offer has no H.264 (packetization-mode=1) video; offered: VP8, VP9", 0},
		{"H.264 mode 0 only", "live/cam1", "application/sdp", mode0, 400, probBadOffer, "offer has no H.264 (packetization-mode=1) video; offered: H264", 0},
		{"sendonly video", "live/cam1", "application/sdp", sendonly, 400, probBadOffer, "offer has no recvonly or sendrecv video m-section (got sendonly)", 0},
		{"unsupported profile", "live/cam1", "application/sdp", high, 400, probBadOffer, "offered: f4001f", 0},
		{"no publisher", "live/none", "application/sdp", good, 409, probNoPublisher, `no stream is being published on path "live/none"`, 1},
		{"invalid path", "live//cam", "application/sdp", good, 404, probBadPath, "invalid path name", 0},
		{"path full", "live/full", "application/sdp", good, 503, probPathFull, `path "live/full" has reached its viewer limit`, 10},
		{"server full", "live/server", "application/sdp", good, 503, probServerFull, "the server is at capacity", 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// No Accept, curl's */* and a browser's fetch default all get
			// the problem JSON; text/plain gets the detail alone.
			for _, accept := range []string{"", "*/*", "application/problem+json", "text/plain"} {
				hdr := map[string]string{}
				if accept != "" {
					hdr["Accept"] = accept
				}
				resp, body := do(t, http.MethodPost, hs.URL+"/"+c.path+"/whep", c.ctype, c.body, hdr)
				if accept == "text/plain" {
					checkTextError(t, resp, body, c.code, c.want)
				} else {
					checkProblem(t, resp, body, c.code, c.slug, c.want)
				}
				want := ""
				if c.retryAfter > 0 {
					want = strconv.Itoa(c.retryAfter)
				}
				if got := resp.Header.Get("Retry-After"); got != want {
					t.Errorf("Accept %q: Retry-After %q, want %q", accept, got, want)
				}
				if accept != "text/plain" {
					var p httpproblem.Problem
					_ = json.Unmarshal([]byte(body), &p)
					if p.RetryAfter != c.retryAfter {
						t.Errorf("retry_after %d, want %d", p.RetryAfter, c.retryAfter)
					}
				}
				checkCORS(t, resp)
			}
		})
	}
	if n := src.paths["live/cam1"].readerCount(); n != 0 {
		t.Errorf("refused offers left %d readers reserved", n)
	}
}

func checkCORS(t *testing.T, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin %q, want *", got)
	}
	if got := resp.Header.Get("Access-Control-Expose-Headers"); got != "Location, ETag, Link, Accept-Patch" {
		t.Errorf("Access-Control-Expose-Headers %q", got)
	}
}

var locationRE = regexp.MustCompile(`^/live/cam1/whep/[0-9a-f]{32}$`)

func TestPostCreated(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	_, hs := startServer(t, src, func(c *Config) {
		c.ICEServers = []turncred.Server{
			{URLs: []string{"stun:stun.example.net:3478"}},
			{URLs: []string{"turn:turn.example.net?transport=udp"}, Username: "u", Credential: "p"},
		}
	})

	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp; charset=utf-8", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("got %d %q, want 201", resp.StatusCode, body)
	}
	h := resp.Header
	if got := h.Get("Content-Type"); got != "application/sdp" {
		t.Errorf("Content-Type %q", got)
	}
	if loc := h.Get("Location"); !locationRE.MatchString(loc) {
		t.Errorf("Location %q does not match %s", loc, locationRE)
	}
	if got := h.Get("Accept-Patch"); got != "application/trickle-ice-sdpfrag" {
		t.Errorf("Accept-Patch %q", got)
	}
	wantLinks := []string{
		`<stun:stun.example.net:3478>; rel="ice-server"`,
		`<turn:turn.example.net?transport=udp>; rel="ice-server"; username="u"; credential="p"; credential-type="password"`,
	}
	if got := h.Values("Link"); strings.Join(got, "\n") != strings.Join(wantLinks, "\n") {
		t.Errorf("Link headers %q, want %q", got, wantLinks)
	}
	checkCORS(t, resp)

	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(body); err != nil {
		t.Fatalf("answer does not parse: %v", err)
	}
	etag := h.Get("ETag")
	if ufrag, _ := sd.MediaDescriptions[0].Attribute("ice-ufrag"); etag != `"`+ufrag+`"` {
		t.Errorf("ETag %q, want the quoted ICE ufrag %q", etag, ufrag)
	}
	if g, _ := sd.Attribute("group"); !strings.HasPrefix(g, "BUNDLE ") {
		t.Errorf("answer has no BUNDLE group: %q", g)
	}
	md := sd.MediaDescriptions[0]
	for _, a := range []string{"sendonly", "rtcp-mux", "end-of-candidates"} {
		if _, ok := md.Attribute(a); !ok {
			t.Errorf("answer video section lacks a=%s", a)
		}
	}
	if !strings.Contains(body, " 127.0.0.1 ") {
		t.Errorf("answer has no loopback host candidate:\n%s", body)
	}
	if p.readerCount() != 1 {
		t.Errorf("reader not reserved at POST")
	}
}

func TestOptions(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	resp, _ := postOffer(t, hs.URL+"/live/cam1/whep")
	for _, u := range []string{"/live/cam1/whep", resp.Header.Get("Location")} {
		resp, _ := do(t, http.MethodOptions, hs.URL+u, "", "", nil)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("OPTIONS %s: %d", u, resp.StatusCode)
		}
		checkCORS(t, resp)
		h := resp.Header
		if got := h.Get("Access-Control-Allow-Methods"); got != "OPTIONS, POST, PATCH, DELETE" {
			t.Errorf("%s Allow-Methods %q", u, got)
		}
		if got := h.Get("Access-Control-Allow-Headers"); got != "Authorization, Content-Type, If-Match" {
			t.Errorf("%s Allow-Headers %q", u, got)
		}
		// Cached for a day, so a reconnecting player does not preflight
		// every POST and DELETE.
		if got := h.Get("Access-Control-Max-Age"); got != "86400" {
			t.Errorf("%s Access-Control-Max-Age %q, want 86400", u, got)
		}
		if u == "/live/cam1/whep" && h.Get("Accept-Post") != "application/sdp" {
			t.Errorf("endpoint Accept-Post %q", h.Get("Accept-Post"))
		}
	}
}

func TestFallback(t *testing.T) {
	_, hs := startServer(t, newTestSource(), nil)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/live/cam1"},
		{http.MethodGet, "/live/cam1/whep"},
		{http.MethodPost, "/whep"},
		{http.MethodPut, "/live/cam1/whep/abc"},
	} {
		resp, _ := do(t, c.method, hs.URL+c.path, "", "", nil)
		if resp.StatusCode != http.StatusTeapot {
			t.Errorf("%s %s: %d, want the fallback", c.method, c.path, resp.StatusCode)
		}
	}
}
