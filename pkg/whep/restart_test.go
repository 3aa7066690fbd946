package whep

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// TestICERestart drives a real ICE restart: a pion viewer restarts ICE,
// PATCHes its new credentials, applies the server's new credentials and
// candidates from the 200 response, reconnects, and media keeps flowing.
func TestICERestart(t *testing.T) {
	clip := makeClip(t, 30, 30)
	src := newTestSource()
	p := src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	feed(t, p, clip)

	off := testkit.Offer(t, testkit.OfferOptions{Codecs: []webrtc.RTPCodecParameters{h264Codec(102, "42e01f", 1)}})
	pc := off.PC
	var packets atomic.Uint64
	readDone := make(chan struct{})
	trackSeen := make(chan struct{})
	t.Cleanup(func() {
		_ = pc.GracefulClose()
		select {
		case <-trackSeen:
			<-readDone
		default:
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		close(trackSeen)
		defer close(readDone)
		for {
			if _, _, err := tr.ReadRTP(); err != nil {
				return
			}
			packets.Add(1)
		}
	})
	iceConnected := make(chan struct{}, 4)
	pc.OnICEConnectionStateChange(func(st webrtc.ICEConnectionState) {
		if st == webrtc.ICEConnectionStateConnected {
			iceConnected <- struct{}{}
		}
	})

	resp, answer := post(t, hs.URL+"/live/cam1/whep", "application/sdp", off.SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %q", resp.StatusCode, answer)
	}
	url, etag := hs.URL+resp.Header.Get("Location"), resp.Header.Get("ETag")
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	wait(iceConnected, "ICE connected")
	select {
	case <-trackSeen:
	case <-ctx.Done():
		t.Fatal("no track")
	}
	testkit.WaitFor(t, 10*time.Second, "packets before the restart", func() bool { return packets.Load() > 0 })

	restart, err := pc.CreateOffer(&webrtc.OfferOptions{ICERestart: true})
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(restart); err != nil {
		t.Fatal(err)
	}
	<-gathered
	mine := offerICE(t, pc.LocalDescription().SDP)
	body := mine.Video(102, "0")

	resp, frag := do(t, http.MethodPatch, url, "application/trickle-ice-sdpfrag", body, map[string]string{"If-Match": etag})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("restart PATCH: %d %q", resp.StatusCode, frag)
	}
	newETag := resp.Header.Get("ETag")
	if newETag == "" || newETag == etag || resp.Header.Get("Content-Type") != "application/trickle-ice-sdpfrag" {
		t.Fatalf("restart answer headers: ETag %q (old %q), Content-Type %q", newETag, etag, resp.Header.Get("Content-Type"))
	}
	theirs, err := sdpoffer.ParseFrag(frag)
	if err != nil || theirs.Ufrag == "" || theirs.Pwd == "" || len(theirs.Candidates) == 0 || !theirs.End {
		t.Fatalf("restart answer fragment %q: %+v %v", frag, theirs, err)
	}
	if `"`+theirs.Ufrag+`"` != newETag {
		t.Errorf("new ETag %q is not the new ufrag %q", newETag, theirs.Ufrag)
	}

	// The viewer's new remote description: the first answer with the
	// server's new credentials and candidates.
	before := packets.Load()
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer,
		SDP: restartedAnswer(answer, theirs.Ufrag, theirs.Pwd, theirs.Candidates)}); err != nil {
		t.Fatal(err)
	}
	wait(iceConnected, "ICE connected again after the restart")
	testkit.WaitFor(t, 10*time.Second, "packets after the restart", func() bool { return packets.Load() > before+50 })

	// The old ETag is stale now.
	resp, msg := do(t, http.MethodPatch, url, "application/trickle-ice-sdpfrag", "a=end-of-candidates\r\n", map[string]string{"If-Match": etag})
	if resp.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("PATCH with the old ETag: %d %q, want 412", resp.StatusCode, msg)
	}
}

// restartedAnswer is the first answer with the server's new ICE
// credentials and the given candidates: the viewer's new remote
// description after an ICE restart.
func restartedAnswer(answer, ufrag, pwd string, candidates []string) string {
	var lines []string
	for _, l := range strings.Split(answer, "\r\n") {
		switch {
		case strings.HasPrefix(l, "a=ice-ufrag:"):
			l = "a=ice-ufrag:" + ufrag
		case strings.HasPrefix(l, "a=ice-pwd:"):
			l = "a=ice-pwd:" + pwd
		case strings.HasPrefix(l, "a=candidate:"), l == "a=end-of-candidates":
			continue
		case strings.HasPrefix(l, "a=mid:"):
			lines = append(lines, l)
			for _, c := range candidates {
				lines = append(lines, "a="+c)
			}
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\r\n")
}

// offerICE is a viewer's ICE restart offer as its PATCH sends it: the new
// credentials and every section's candidates, read through the server's
// one offer model.
func offerICE(t *testing.T, raw string) sdpoffer.Frag {
	t.Helper()
	m, err := sdpoffer.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	v := m.VideoSection()
	l := sdpoffer.Frag{Ufrag: v.ICE.Ufrag, Pwd: v.ICE.Pwd, End: true}
	for _, s := range m.Sections {
		for _, c := range s.Candidates {
			if c = "candidate:" + c; !slices.Contains(l.Candidates, c) {
				l.Candidates = append(l.Candidates, c)
			}
		}
	}
	return l
}
