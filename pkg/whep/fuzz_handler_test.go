package whep

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/admission"
)

// The handler fuzz targets drive the real Handler (HTTP parsing, body
// limits, offer checks, pion's SetRemoteDescription, session registry)
// in-process through httptest.NewRecorder: no HTTP socket per input, so
// they run at hundreds of inputs a second. The invariant is the one a
// client relies on: a malformed request is the client's fault (4xx), never
// a 5xx, and never a panic.

// fuzzServer runs a Server for a whole fuzz target, publishing live/cam1.
func fuzzServer(f *testing.F) http.Handler {
	f.Helper()
	src := newTestSource()
	src.publish("live/cam1")
	srv, err := New(Config{
		Plane:  loopbackPlane(f),
		Source: src,
		// The default 32 would fill with sessions whose ICE never starts
		// faster than they time out; every 201 is deleted at once anyway.
		Limits: admission.ViewerLimits{MaxHandshakes: 1 << 20, MaxHandshakesPerClient: 1 << 20,
			MaxPendingOffers: 1 << 20, OfferRate: 1 << 20, OfferBurst: 1 << 20},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		f.Fatalf("Run: %v", err)
	}
	f.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.Errorf("Run: %v", err)
		}
	})
	return srv.Handler(nil)
}

func serve(h http.Handler, method, target, ctype, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var candidateRE = regexp.MustCompile(`(?i)candidate:[^\r\n]*`)

// offLoopback reports whether body names an ICE candidate pion would send
// connectivity checks to off this host (a non-loopback address, or a
// name, which pion would resolve through DNS or mDNS). Fuzz inputs are
// arbitrary, and the tests' traffic must stay on loopback.
func offLoopback(body string) bool {
	for _, c := range candidateRE.FindAllString(body, -1) {
		cand, err := ice.UnmarshalCandidate(strings.TrimSpace(c))
		if err != nil {
			continue // pion parses candidates with the same function: it refuses this one too
		}
		a, err := netip.ParseAddr(cand.Address())
		if err != nil || !a.Unmap().IsLoopback() {
			return true
		}
	}
	return false
}

// seedOffers are the offers of TestPostRefusals and TestAnswerCodec, with
// their host candidates dropped (they name this machine's interfaces) and
// one loopback candidate added to the first.
func seedOffers(t testing.TB) []string {
	strip := func(sdp string) string {
		var out []string
		for _, l := range strings.SplitAfter(sdp, "\n") {
			if !strings.HasPrefix(l, "a=candidate:") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "")
	}
	good := strip(testkit.Offer(t, testkit.OfferOptions{}).SDP)
	withCand := strings.Replace(good, "a=mid:0\r\n",
		"a=mid:0\r\na=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n", 1)
	return []string{
		good,
		withCand,
		strip(testkit.Offer(t, testkit.OfferOptions{Audio: true}).SDP),
		strip(testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{
			{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, PayloadType: 96},
		}}).SDP),
		strip(testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "42e01f", 0)}}).SDP),
		strip(testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "42e01f", 1)},
			Direction: webrtc.RTPTransceiverDirectionSendonly}).SDP),
		strip(testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(100, "f4001f", 1)}}).SDP),
		chromeOffer,
		"hello",
		"",
	}
}

func TestFuzzCorpusHandler(t *testing.T) {
	var offers, frags [][]any
	for _, o := range seedOffers(t) {
		offers = append(offers, []any{o})
	}
	for _, fr := range seedFrags {
		frags = append(frags, []any{fr.body, fr.ifMatch})
	}
	testkit.SeedCorpus(t, "FuzzHandlerOffer", offers...)
	testkit.SeedCorpus(t, "FuzzHandlerPatch", frags...)
}

func FuzzHandlerOffer(f *testing.F) {
	for _, o := range seedOffers(f) {
		f.Add(o)
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		if offLoopback(body) {
			t.Skip("candidate off loopback")
		}
		rec := serve(h, http.MethodPost, "/live/cam1/whep", mimeSDP, body, nil)
		if rec.Code >= 500 {
			t.Fatalf("POST answered %d %q to offer %q", rec.Code, rec.Body.String(), body)
		}
		if rec.Code != http.StatusCreated {
			return
		}
		loc := rec.Header().Get("Location")
		if del := serve(h, http.MethodDelete, loc, "", "", nil); del.Code != http.StatusOK {
			t.Fatalf("DELETE %s answered %d %q", loc, del.Code, del.Body.String())
		}
	})
}

// seedFrags are TestPatch's bodies and If-Match values; "ETAG" stands for
// the session's current ETag.
var seedFrags = []struct{ body, ifMatch string }{
	{"a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n", ""},
	{"a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n", "ETAG"},
	{"a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\na=end-of-candidates\r\n", "*"},
	{"a=ice-ufrag:newufrag\r\na=ice-pwd:newpasswordnewpasswordxx\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n", "ETAG"},
	{"a=ice-ufrag:newufrag\r\n", "*"},
	{"hello world", ""},
	{"\r\n", ""},
	{"a=candidate:nonsense\r\n", ""},
	{"a=end-of-candidates\r\n", `"stale"`},
}

func FuzzHandlerPatch(f *testing.F) {
	for _, s := range seedFrags {
		f.Add(s.body, s.ifMatch)
	}
	h := fuzzServer(f)
	offer := seedOffers(f)[0]
	var loc, etag string
	// newSession gives the fuzz function a live session; an input that
	// ends it (an ICE restart pion refuses) makes the next input open
	// another, so every input meets a session.
	newSession := func(t *testing.T) {
		rec := serve(h, http.MethodPost, "/live/cam1/whep", mimeSDP, offer, nil)
		if rec.Code != http.StatusCreated {
			t.Fatalf("seed offer: %d %q", rec.Code, rec.Body.String())
		}
		loc, etag = rec.Header().Get("Location"), rec.Header().Get("ETag")
	}
	f.Fuzz(func(t *testing.T, body, ifMatch string) {
		if offLoopback(body) {
			t.Skip("candidate off loopback")
		}
		if loc == "" {
			newSession(t)
		}
		hdr := map[string]string{}
		if ifMatch != "" {
			hdr["If-Match"] = strings.ReplaceAll(ifMatch, "ETAG", etag)
		}
		rec := serve(h, http.MethodPatch, loc, mimeSDPFrag, body, hdr)
		if rec.Code >= 500 {
			t.Fatalf("PATCH answered %d %q to %q (If-Match %q)", rec.Code, rec.Body.String(), body, ifMatch)
		}
		switch {
		case rec.Code == http.StatusOK:
			etag = rec.Header().Get("ETag")
		case rec.Code == http.StatusNotFound:
			loc = ""
		}
		// A session that has taken many candidates and restarts is not
		// what a viewer's PATCH meets: start afresh now and then.
		if rec.Code == http.StatusOK || strings.Count(body, "candidate") > 0 {
			if loc != "" {
				serve(h, http.MethodDelete, loc, "", "", nil)
			}
			loc = ""
		}
	})
}
