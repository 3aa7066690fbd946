package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

const interruptedStatus = "Stream interrupted — waiting for the publisher"

// TestBrowserPublisherRestart plays the player page in headless Chromium
// through a publisher's SIGKILL and restart: the page says the stream is
// interrupted within 2 s of the kill, plays the restarted publisher's
// stream in the same session (no new WHEP request) at its new resolution,
// and, once the grace period passes with no publisher, sees its
// PeerConnection leave "connected" within a second of the server ending
// the session (RTCP BYE, DTLS close_notify) instead of waiting for ICE.
//
// Not parallel: headless Chromium needs the machine to itself, like
// TestBrowserPlays.
func TestBrowserPublisherRestart(t *testing.T) {
	b := browserAndServer(t, "10.211.0", "pathDefaults:\n  publisherGrace: 4s\n")
	ctx, srv, srvNS := b.ctx, b.srv, b.srvNS
	first := ffmpegInNetns(t, srvNS, "1280x720", srv.SRTURL("publish:live/cam1"))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1")
	if err := chromedp.Do(ctx, chromedp.Navigate("http://10.211.0.1:8889/live/cam1")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	type pageState struct {
		Status        string `json:"status"`
		Connection    string `json:"connection"`
		VideoWidth    int    `json:"videoWidth"`
		FramesDecoded int    `json:"framesDecoded"`
	}
	poll := pagePoller[pageState](t, ctx)
	var st pageState
	testkit.WaitFor(t, 15*time.Second, "the page to play 1280x720", func() bool {
		st = poll()
		return livePlaying(st.Status) && st.VideoWidth == 1280 && st.FramesDecoded > 30
	})

	killedAt := time.Now()
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill ffmpeg: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the page to say the stream is interrupted", func() bool {
		st = poll()
		return st.Status == interruptedStatus
	})
	if d := time.Since(killedAt); d > 2*time.Second {
		t.Errorf("the page said %q %v after the publisher died, want ≤ 2 s", interruptedStatus, d.Round(time.Millisecond))
	}
	t.Logf("interrupted %v after the kill; connection %s", time.Since(killedAt).Round(time.Millisecond), st.Connection)

	select {
	case <-time.After(time.Until(killedAt.Add(2 * time.Second))):
	case <-t.Context().Done():
		return
	}
	second := ffmpegInNetns(t, srvNS, "640x360", srv.SRTURL("publish:live/cam1"))
	restartedAt := time.Now()
	f0 := st.FramesDecoded
	testkit.WaitFor(t, 10*time.Second, "the page to play the new publisher at 640x360", func() bool {
		st = poll()
		return livePlaying(st.Status) && st.VideoWidth == 640 && st.FramesDecoded > f0+30
	})
	t.Logf("playing again %v after the restart", time.Since(restartedAt).Round(time.Millisecond))
	if n := len(srv.Log.Lines("viewer opened", "path=live/cam1")); n != 1 {
		t.Errorf("%d WHEP sessions opened, want 1 (the restart must continue the session)", n)
	}

	if err := second.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill ffmpeg: %v", err)
	}
	srv.WaitLog(t, 20*time.Second, "no publisher within the grace period", "path=live/cam1")
	endedAt := time.Now()
	testkit.WaitFor(t, 10*time.Second, "the page's PeerConnection to leave \"connected\"", func() bool {
		st = poll()
		return st.Connection != "connected"
	})
	left := time.Since(endedAt)
	t.Logf("page left \"connected\" %v after the server ended the session; status %q", left.Round(time.Millisecond), st.Status)
	if left > time.Second {
		t.Errorf("the page's PeerConnection stayed connected %v after the server ended the session, want ≤ 1 s", left.Round(time.Millisecond))
	}
	if !strings.Contains(strings.Join(srv.Log.Lines("viewer closed", "path=live/cam1"), "\n"), "publisher gone") {
		t.Errorf("the session did not end as publisher gone: %v", srv.Log.Lines("viewer closed"))
	}
}
