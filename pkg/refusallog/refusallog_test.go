package refusallog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Problem slugs as pkg/whep answers them.
const (
	probNoH264       = "no-h264"
	probNoPublisher  = "no-publisher"
	probUnauthorized = "unauthorized"
)

// TestRefusalLog: one line per reason per second, carrying the count of
// the refusals of that reason it held back, the offered codecs and the
// client's address; other reasons are not held back by it.
func TestRefusalLog(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), "offer refused")
	now := time.Unix(1000, 0)
	l.lim.Now = func() time.Time { return now }
	r := httptest.NewRequest(http.MethodPost, "/live/cam1/whep", nil)
	r.RemoteAddr = "192.0.2.7:5000"
	offer := "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 98\r\na=rtpmap:96 VP8/90000\r\na=rtpmap:98 VP9/90000\r\n" +
		"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"
	for range 5 {
		l.Refused(r, "live/cam1", 400, probNoH264, "offer has no H.264", offer)
		now = now.Add(100 * time.Millisecond)
	}
	l.Refused(r, "live/cam1", 409, probNoPublisher, "no stream", "")
	now = now.Add(600 * time.Millisecond) // 1.1 s after the first
	l.Refused(r, "live/cam1", 400, probNoH264, "offer has no H.264", offer)

	lines := jsonLines(t, &buf)
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3 (first no-h264, no-publisher, next second's no-h264): %s", len(lines), buf.String())
	}
	want := []struct {
		reason     string
		suppressed float64
	}{{probNoH264, 0}, {probNoPublisher, 0}, {probNoH264, 4}}
	for i, w := range want {
		m := lines[i]
		if m["msg"] != "offer refused" || m["reason"] != w.reason || m["suppressed"] != w.suppressed || m["remote"] != "192.0.2.7:5000" || m["path"] != "live/cam1" {
			t.Errorf("line %d: %v, want reason %s suppressed %v", i, m, w.reason, w.suppressed)
		}
	}
	if got := lines[0]["codecs"]; got != "video/VP8,video/VP9,audio/opus" {
		t.Errorf("codecs %q", got)
	}
	if got := lines[0]["status"]; got != float64(400) {
		t.Errorf("status %v", got)
	}
}

// TestRefusalLogFlush: the refusals held back in a flood's last second
// are logged by the next flush once their second is over, as one line
// with their count and status, and by the final flush at once; a flush
// with nothing held back writes nothing.
func TestRefusalLogFlush(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), "offer refused")
	now := time.Unix(1000, 0)
	start := now
	l.lim.Now = func() time.Time { return now }
	for range 3 { // one line, two held back
		l.Refused(nil, "live/cam1", 409, probNoPublisher, "no stream", "")
	}
	now = start.Add(Every / 2)
	l.Flush(false)
	if n := len(jsonLines(t, &buf)); n != 1 {
		t.Fatalf("%d lines before the second is over, want 1: %s", n, buf.String())
	}
	now = start.Add(Every)
	l.Flush(false)
	now = start.Add(3 * Every)
	l.Flush(false) // nothing left
	lines := jsonLines(t, &buf)
	if len(lines) != 2 || lines[1]["msg"] != "offer refused: held back" || lines[1]["reason"] != probNoPublisher || lines[1]["suppressed"] != float64(2) || lines[1]["status"] != float64(409) {
		t.Fatalf("lines %v, want a second one with the two held back", lines)
	}

	now = now.Add(10 * Every)
	l.Refused(nil, "live/cam1", 401, probUnauthorized, "token", "")
	l.Refused(nil, "live/cam1", 401, probUnauthorized, "token", "")
	l.Flush(true)
	lines = jsonLines(t, &buf)
	if len(lines) != 4 || lines[3]["reason"] != probUnauthorized || lines[3]["suppressed"] != float64(1) {
		t.Fatalf("after the final flush: %v, want the held-back refusal logged", lines)
	}
}

// jsonLines are the lines of a JSON log, every one of them a refusal's.
func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("log %q: %v", buf.String(), err)
		}
		out = append(out, m)
	}
	return out
}
