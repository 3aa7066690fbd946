package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// answer is the shape of srtwhep's answer to an offer with audio, trimmed
// to what matters here; audioPort 0 is a rejected section.
func answer(audioPort string) string {
	return strings.Join([]string{
		"v=0",
		"o=- 1 1 IN IP4 127.0.0.1",
		"s=-",
		"t=0 0",
		"a=group:BUNDLE 0 1",
		"m=video 9 UDP/TLS/RTP/SAVPF 102",
		"c=IN IP4 0.0.0.0",
		"a=mid:0",
		"a=rtpmap:102 H264/90000",
		"a=sendonly",
		"m=audio " + audioPort + " UDP/TLS/RTP/SAVPF 111",
		"c=IN IP4 0.0.0.0",
		"a=mid:1",
		"a=rtpmap:111 opus/48000/2",
		"a=sendonly",
		"",
	}, "\r\n")
}

func TestAnsweredAudio(t *testing.T) {
	pts, ok, err := answeredAudio([]byte(answer("9")))
	if err != nil || !ok || !slices.Equal(pts, []uint8{111}) {
		t.Errorf("accepted audio: %v %v %v, want [111] true", pts, ok, err)
	}
	if pts, ok, err := answeredAudio([]byte(answer("0"))); err != nil || ok || len(pts) != 0 {
		t.Errorf("rejected audio: %v %v %v, want nothing", pts, ok, err)
	}
	videoOnly := answer("9")
	videoOnly = videoOnly[:strings.Index(videoOnly, "m=audio")]
	if _, ok, err := answeredAudio([]byte(videoOnly)); err != nil || ok {
		t.Errorf("video-only answer: %v %v, want no audio", ok, err)
	}
	if _, _, err := answeredAudio([]byte("not SDP")); err == nil {
		t.Error("garbage parsed as SDP")
	}
}

// TestAnswerTap checks the tap sees the 201's answer and whepclient still
// reads it whole, and that other replies go by untouched.
func TestAnswerTap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/s/1")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, answer("9"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	var c counters
	hc := &http.Client{Transport: &answerTap{base: http.DefaultTransport, onAnswer: func(b []byte) {
		if err := c.learnAnswer(b); err != nil {
			t.Error(err)
		}
	}}}
	resp, err := hc.Post(srv.URL, "application/sdp", strings.NewReader("offer"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != answer("9") {
		t.Errorf("body after the tap: %q, %v", body, err)
	}
	if !c.audioAnswered.Load() || !c.audioPT.has(111) || c.audioPT.has(102) {
		t.Errorf("answered %v, has 111 %v, has 102 %v; want true, true, false", c.audioAnswered.Load(), c.audioPT.has(111), c.audioPT.has(102))
	}

	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/s/1", nil)
	resp, err = hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE through the tap: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		err  error
		want bool
		max  time.Duration
	}{
		{&whepclient.HTTPError{StatusCode: 503, RetryAfter: "1"}, true, 1250 * time.Millisecond},
		{fmt.Errorf("dial: %w", &whepclient.HTTPError{StatusCode: 503, RetryAfter: "30"}), true, 2250 * time.Millisecond},
		{&whepclient.HTTPError{StatusCode: 429, RetryAfter: "1"}, true, 1250 * time.Millisecond}, // the offer rate of one address
		{&whepclient.HTTPError{StatusCode: 503}, false, 0},                                       // no hint: a real failure
		{&whepclient.HTTPError{StatusCode: 404, RetryAfter: "1"}, false, 0},                      // not published
		{&whepclient.HTTPError{StatusCode: 503, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"}, false, 0},
		{errors.New("ICE failed"), false, 0},
	}
	for _, c := range cases {
		d, again := retryAfter(c.err)
		if again != c.want || d > c.max {
			t.Errorf("%v: retry %v after %v, want %v within %v", c.err, again, d, c.want, c.max)
		}
	}
}
