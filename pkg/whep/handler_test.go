package whep

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestAnswerCodec checks that the answer carries only H.264, with the
// viewer's payload type and a profile the viewer offered.
func TestAnswerCodec(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	cases := []struct {
		name    string
		codecs  []webrtc.RTPCodecParameters
		wantPT  int
		profile string
	}{
		{"browser-like default set", nil, -1, "42e01f"},
		{"42e01f preferred over 4d001f", []webrtc.RTPCodecParameters{h264Codec(120, "4d001f", 1), h264Codec(121, "42e01f", 1)}, 121, "42e01f"},
		{"only 42001f offered", []webrtc.RTPCodecParameters{h264Codec(110, "42001f", 1), h264Codec(111, "42001f", 0)}, 110, "42001f"},
		{"main only", []webrtc.RTPCodecParameters{h264Codec(127, "4d0032", 1)}, 127, "4d0032"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off := testkit.Offer(t, testkit.OfferOptions{Codecs: c.codecs})
			resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", off.SDP)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			var sd sdp.SessionDescription
			if err := sd.UnmarshalString(body); err != nil {
				t.Fatal(err)
			}
			md := sd.MediaDescriptions[0]
			if len(md.MediaName.Formats) != 1 {
				t.Fatalf("answer offers %d payload types %v, want exactly one", len(md.MediaName.Formats), md.MediaName.Formats)
			}
			pt := md.MediaName.Formats[0]
			if c.wantPT >= 0 && pt != fmt.Sprint(c.wantPT) {
				t.Errorf("payload type %s, want %d", pt, c.wantPT)
			}
			rtpmap, _ := md.Attribute("rtpmap")
			if rtpmap != pt+" H264/90000" {
				t.Errorf("rtpmap %q", rtpmap)
			}
			fmtpLine, _ := md.Attribute("fmtp")
			if want := pt + " level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=" + c.profile; fmtpLine != want {
				t.Errorf("fmtp %q, want %q", fmtpLine, want)
			}
			if !strings.Contains(off.SDP, "profile-level-id="+c.profile) {
				t.Errorf("answered profile %s was not offered", c.profile)
			}
			if !strings.Contains(body, "a=rtcp-fb:"+pt+" nack\r\n") {
				t.Errorf("answer lacks generic NACK feedback:\n%s", body)
			}
			if err := off.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: body}); err != nil {
				t.Errorf("the offerer rejects the answer: %v", err)
			}
		})
	}
}

// TestPendingLimit: offers whose viewer never starts ICE are bounded in
// total; beyond the bound a POST gets 503 + Retry-After, and once the ICE
// start timeout has closed them their slots and readers come back.
func TestPendingLimit(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxPendingOffers = 1
		c.Limits.ICEStartTimeout = 300 * time.Millisecond
	})
	// The first offer's answer is never applied, so it stays pending.
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("first offer: %d %q", resp.StatusCode, body)
	}
	if st := srv.Stats(); st.PendingOffers != 1 || st.HandshakesInFlight != 0 {
		t.Errorf("PendingOffers %d, HandshakesInFlight %d, want 1 and 0", st.PendingOffers, st.HandshakesInFlight)
	}
	resp, body = post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	checkProblem(t, resp, body, http.StatusServiceUnavailable, probHandshakes, "too many WebRTC offers waiting for ICE to start (limit 1)")
	if got := srv.Stats().Rejected["pending_limit"]; got != 1 {
		t.Errorf("pending_limit rejections %d, want 1", got)
	}
	// The silent session is closed, counts as a failed handshake and
	// gives its slot and its reader back.
	testkit.WaitFor(t, 10*time.Second, "the silent offer to be closed", func() bool {
		st := srv.Stats()
		return st.PendingOffers == 0 && st.Sessions == 0 && p.readerCount() == 0
	})
	if got := srv.Stats().HandshakeFailures; got != 1 {
		t.Errorf("HandshakeFailures %d, want 1", got)
	}
	resp, body = post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("offer after the slot was freed: %d %q", resp.StatusCode, body)
	}
}

func TestOptions(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
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

func TestDeleteAndKick(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, nil)
	offer := func() string {
		resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		return resp.Header.Get("Location")
	}
	loc := offer()
	if got := len(srv.Sessions()); got != 1 {
		t.Fatalf("Sessions() has %d entries, want 1", got)
	}
	resp, _ := do(t, http.MethodDelete, hs.URL+"/live/other/whep/"+loc[len(loc)-32:], "", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE on another path's URL: %d, want 404", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodDelete, hs.URL+loc, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	checkCORS(t, resp)
	// Teardown is idempotent: the session is gone, as the client wants.
	resp, body := do(t, http.MethodDelete, hs.URL+loc, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("second DELETE: %d %q, want 200", resp.StatusCode, body)
	}
	testkit.WaitFor(t, 10*time.Second, "the deleted session to release its reader", func() bool { return p.readerCount() == 0 })
	// Still 200 once the session's goroutine has ended it, but only on its
	// own path, and an id never handed out is 404.
	if resp, body := do(t, http.MethodDelete, hs.URL+loc, "", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE after the end: %d %q, want 200", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodDelete, hs.URL+"/live/other/whep/"+loc[len(loc)-32:], "", "", nil)
	checkProblem(t, resp, body, http.StatusNotFound, probNoSession, "no such WHEP session")
	resp, body = do(t, http.MethodDelete, hs.URL+"/live/cam1/whep/0123456789abcdef0123456789abcdef", "", "", nil)
	checkProblem(t, resp, body, http.StatusNotFound, probNoSession, "no such WHEP session")

	loc = offer()
	id := loc[len(loc)-32:]
	if !srv.KickSession(id) {
		t.Fatal("Kick returned false for a live session")
	}
	if srv.KickSession(id) {
		t.Error("Kick returned true twice")
	}
	testkit.WaitFor(t, 10*time.Second, "the kicked session to end", func() bool { return len(srv.Sessions()) == 0 && p.readerCount() == 0 })
}

func TestPatch(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	url := hs.URL + resp.Header.Get("Location")
	etag := resp.Header.Get("ETag")
	const frag = "application/trickle-ice-sdpfrag"
	cand := "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"
	restart := "a=ice-ufrag:newufrag\r\na=ice-pwd:newpasswordnewpasswordxx\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\n" + cand

	cases := []struct {
		name, url, ctype, body string
		ifMatch                string
		code                   int
		want                   string
	}{
		{"unknown session", hs.URL + "/live/cam1/whep/0123456789abcdef0123456789abcdef", frag, cand, "", 404, "no such WHEP session"},
		{"wrong content type", url, "application/sdp", cand, "", 415, "Content-Type must be application/trickle-ice-sdpfrag"},
		{"garbage", url, frag, "hello world", "", 400, "malformed sdpfrag: line 1"},
		{"empty", url, frag, "\r\n", "", 400, "empty sdpfrag"},
		{"bad candidate", url, frag, "a=candidate:nonsense\r\n", "", 400, "candidate 1"},
		{"trickle", url, frag, cand, "", 204, ""},
		{"trickle with matching If-Match", url, frag, cand, etag, 204, ""},
		{"stale If-Match", url, frag, cand, `"stale"`, 412, "If-Match does not match"},
		{"restart without If-Match", url, frag, restart, "", 428, "an ICE restart needs If-Match"},
		{"restart with stale If-Match", url, frag, restart, `"stale"`, 412, "If-Match does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{}
			if c.ifMatch != "" {
				hdr["If-Match"] = c.ifMatch
			}
			resp, body := do(t, http.MethodPatch, c.url, c.ctype, c.body, hdr)
			if c.code >= 400 {
				checkProblem(t, resp, body, c.code, "", c.want)
				hdr["Accept"] = "text/plain"
				resp, body := do(t, http.MethodPatch, c.url, c.ctype, c.body, hdr)
				checkTextError(t, resp, body, c.code, c.want)
			} else if resp.StatusCode != c.code {
				t.Fatalf("got %d %q, want %d", resp.StatusCode, body, c.code)
			}
			checkCORS(t, resp)
		})
	}
}
