package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestOperateMetricsAndAPI: during a real stream with two real viewers the
// scrape shows the path's readers, bytes, drops and SRT RTT; the control
// API lists the path and the sessions; kicking a session through it ends
// that viewer within 1 s while the other keeps playing; kicking the
// publisher ends the path; a configured API token is enforced.
func TestOperateMetricsAndAPI(t *testing.T) {
	t.Parallel()
	const path = "live/ops"
	ts := startServer(t, func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:0" })
	ff := startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:"+path))
	ts.waitPublisher(t, path)
	kicked, stays := dialViewer(t, ts, path), dialViewer(t, ts, path)
	kicked.waitUnits(t, 30, 15*time.Second)
	stays.waitUnits(t, 30, 15*time.Second)

	t.Run("metrics", func(t *testing.T) {
		addr := ts.addrs.Load().Metrics
		if addr == "" {
			t.Fatal("metrics listener not bound")
		}
		var m map[string]*dto.MetricFamily
		testkit.WaitFor(t, 10*time.Second, "a scrape with sent bytes and an RTT sample", func() bool {
			m = testkit.Scrape(t, addr)
			sent, _ := testkit.Series(m, "srtwhep_path_sent_bytes_total", "path", path)
			_, ok := testkit.Series(m, "srtwhep_srt_rtt_seconds", "path", path)
			return sent > 0 && ok
		})
		if v, _ := testkit.Series(m, "srtwhep_path_readers", "path", path); v != 2 {
			t.Errorf("srtwhep_path_readers = %v, want 2 (two viewers)", v)
		}
		if v, _ := testkit.Series(m, "srtwhep_path_ingest_bytes_total", "path", path); v <= 0 {
			t.Errorf("srtwhep_path_ingest_bytes_total = %v, want > 0", v)
		}
		if v, ok := testkit.Series(m, "srtwhep_path_frames_dropped_total", "path", path, "reason", "slow_reader"); !ok || v != 0 {
			t.Errorf("slow_reader drops = %v (present %v), want 0 for two healthy viewers", v, ok)
		}
		if rtt, _ := testkit.Series(m, "srtwhep_srt_rtt_seconds", "path", path); rtt < 0 || rtt >= 1 {
			t.Errorf("srtwhep_srt_rtt_seconds = %v, want within [0, 1) on loopback", rtt)
		}
		if v, ok := testkit.Series(m, "srtwhep_webrtc_rejected_total", "reason", "auth"); !ok || v != 0 {
			t.Errorf("srtwhep_webrtc_rejected_total{reason=auth} = %v (present %v), want 0", v, ok)
		}
	})

	t.Run("api lists path and sessions", func(t *testing.T) {
		var paths struct{ Paths []api.Path }
		if code := ts.apiJSON(t, "GET", "/v1/paths", "", &paths); code != http.StatusOK {
			t.Fatalf("GET /v1/paths: %d", code)
		}
		if len(paths.Paths) != 1 {
			t.Fatalf("GET /v1/paths lists %d paths, want 1: %+v", len(paths.Paths), paths.Paths)
		}
		p := paths.Paths[0]
		if p.Name != path || p.Publisher == nil || !strings.HasPrefix(p.Publisher.Remote, "127.0.0.1:") ||
			p.Codec != "H264" || p.Width != 640 || p.Height != 360 || p.Readers != 2 || p.IngestBytes == 0 {
			t.Errorf("path entry: %+v (publisher %+v)", p, p.Publisher)
		}
		var one api.Path
		if code := ts.apiJSON(t, "GET", "/v1/paths/"+path, "", &one); code != http.StatusOK || one.Name != path {
			t.Errorf("GET /v1/paths/%s: %d %+v", path, code, one)
		}
		if code := ts.apiJSON(t, "GET", "/v1/paths/live/none", "", nil); code != http.StatusNotFound {
			t.Errorf("GET of an unknown path: %d, want 404", code)
		}
		var sessions struct{ Sessions []api.Session }
		ts.apiJSON(t, "GET", "/v1/sessions", "", &sessions)
		ids := map[string]api.Session{}
		for _, s := range sessions.Sessions {
			ids[s.ID] = s
		}
		for _, v := range []*viewer{kicked, stays} {
			s, ok := ids[sessionID(v)]
			if !ok || s.Path != path || s.State != "connected" || s.Packets == 0 || s.Bytes == 0 {
				t.Errorf("session %s missing or wrong in %+v", sessionID(v), sessions.Sessions)
			}
		}
	})

	t.Run("kick session", func(t *testing.T) {
		before := stays.count()
		if code := ts.apiJSON(t, "DELETE", "/v1/sessions/"+sessionID(kicked), "", nil); code != http.StatusOK {
			t.Fatalf("DELETE session: %d", code)
		}
		select {
		case <-kicked.Done():
		case <-time.After(time.Second):
			t.Fatal("kicked viewer still connected 1 s after the DELETE")
		}
		if code := ts.apiJSON(t, "DELETE", "/v1/sessions/"+sessionID(kicked), "", nil); code != http.StatusNotFound {
			t.Errorf("second DELETE: %d, want 404", code)
		}
		stays.waitUnits(t, before+15, 10*time.Second)
		if st := stays.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
			t.Errorf("the other viewer was disturbed: %d gaps, %d broken AUs", st.SeqGaps, st.BrokenAUs)
		}
	})

	t.Run("token", func(t *testing.T) {
		c := *ts.config()
		c.API.Token = "api-secret-0123456"
		ts.apply(&c)
		code, h, _ := request(t, "GET", ts.apiURL("/v1/sessions"), "", "", "")
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Bearer realm="srtwhep"` {
			t.Errorf("no token: %d %q, want 401 with a Bearer challenge", code, h.Get("WWW-Authenticate"))
		}
		if code := ts.apiJSON(t, "GET", "/v1/sessions", "api-secret-0123456", nil); code != http.StatusOK {
			t.Errorf("with the token: %d", code)
		}
	})

	t.Run("kick publisher", func(t *testing.T) {
		if code := ts.apiJSON(t, "DELETE", "/v1/publishers/"+path, "api-secret-0123456", nil); code != http.StatusOK {
			t.Fatalf("DELETE publisher: %d", code)
		}
		if err := ff.Wait(t, 10*time.Second); err == nil {
			t.Error("ffmpeg exited cleanly after its connection was kicked")
		}
		ts.logs.WaitLog(t, 5*time.Second, "publisher closed", "path="+path, "kicked")
		testkit.WaitFor(t, 5*time.Second, "path to end", func() bool { return !ts.publishing(path) })
	})
}

// TestPublishAuth: wrong credentials and a foreign address are refused at
// the SRT handshake (ffmpeg fails, the log says why); the right credentials
// publish.
func TestPublishAuth(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) {
		c.Paths = map[string]config.Path{
			"live/locked": {PublishUser: "cam", PublishPass: "right-pass"},
			"live/lan":    {PublishIPs: []string{"10.0.0.0/8", "192.0.2.1"}},
		}
	})
	p := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:live/locked:cam:bad-guess-7"))
	if err := p.Wait(t, 15*time.Second); err == nil {
		t.Error("ffmpeg with a wrong password was accepted")
	}
	line := ts.logs.WaitLog(t, 5*time.Second, "srt publisher rejected", "path=live/locked")
	if !strings.Contains(line, "unauthorized") || strings.Contains(line, "bad-guess-7") {
		t.Errorf("rejection should say unauthorized and hide the password: %s", line)
	}

	ts.waitUnthrottled(t)
	p = startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:live/lan"))
	if err := p.Wait(t, 15*time.Second); err == nil {
		t.Error("ffmpeg from an address outside publishIPs was accepted")
	}
	line = ts.logs.WaitLog(t, 5*time.Second, "srt publisher rejected", "path=live/lan")
	if !strings.Contains(line, "forbidden") || !strings.Contains(line, "publishIPs") {
		t.Errorf("address rejection should say forbidden and name publishIPs: %s", line)
	}

	ts.waitUnthrottled(t)
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/locked:cam:right-pass"))
	ts.waitPublisher(t, "live/locked")
}

// TestReadAuth: a WHEP offer without a valid token gets 401 with a Bearer
// challenge, one from outside readIPs 403; the right token plays.
func TestReadAuth(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) {
		c.Paths = map[string]config.Path{
			"live/priv": {ReadTokens: []string{"viewer-1", "viewer-2"}},
			"live/lan":  {ReadIPs: []string{"10.0.0.0/8"}},
		}
	})
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/priv"))
	ts.waitPublisher(t, "live/priv")

	code, h, body := ts.postOffer(t, "live/priv", "")
	if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Bearer realm="srtwhep"` {
		t.Errorf("no token: %d %q, want 401 with a Bearer challenge", code, h.Get("WWW-Authenticate"))
	}
	if strings.Count(body, "\n") != 1 || !strings.Contains(body, "Bearer") {
		t.Errorf("401 body should be one line naming the fix: %q", body)
	}
	code, h, _ = ts.postOffer(t, "live/priv", "viewer-3")
	if code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("wrong token: %d %q, want 401 invalid_token", code, h.Get("WWW-Authenticate"))
	}
	if code, _, _ := ts.postOffer(t, "live/lan", ""); code != http.StatusForbidden {
		t.Errorf("address outside readIPs: %d, want 403", code)
	}
	ts.waitUnthrottled(t)
	v := dialViewerToken(t, ts, "live/priv", "viewer-2")
	testkit.WaitFor(t, 10*time.Second, "media with the token", func() bool { return v.Stats().Frames > 10 })
	ts.logs.WaitLog(t, time.Second, "offer refused", "path=live/priv", "reason=unauthorized")
	if n := ts.whep.Stats().Rejected["auth"]; n != 3 {
		t.Errorf("auth rejections counted %d, want 3", n)
	}
}
