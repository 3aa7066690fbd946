package whepevents

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestSSERawStream reads the wire format with a client that knows only
// event: and data: and decodes the data into a struct without the fields
// it does not know: the retry: line, the heartbeat comments and any
// field a later server adds are skipped, and the events still arrive.
func TestSSERawStream(t *testing.T) {
	old := heartbeatEvery
	heartbeatEvery = 200 * time.Millisecond
	t.Cleanup(func() { heartbeatEvery = old })
	f := newFixture(t, nil)
	h264clip.Feed(t, f.pub, f.clip)
	v := f.dial(t)
	target, _ := whepclient.SSELink(v.SessionURL(), v.Links())
	resp, _ := testkit.Do(t, http.MethodPost, target, "", "", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST without a body: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+loc, nil)
	gr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Body.Close()
	if ct := gr.Header.Get("Content-Type"); ct != "text/event-stream" || gr.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET: Content-Type %q, headers %v", ct, gr.Header)
	}
	sc := bufio.NewScanner(gr.Body)
	var raw []string
	var typ string
	var got []string
	heartbeats := 0
	for len(raw) < 200 && sc.Scan() {
		line := sc.Text()
		raw = append(raw, line)
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d struct {
				ViewerCount *int `json:"viewercount"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			got = append(got, typ)
		case strings.HasPrefix(line, ":"):
			heartbeats++
		}
		if heartbeats >= 2 && len(got) >= 2 {
			break
		}
	}
	t.Logf("raw stream:\n%s", strings.Join(raw, "\n"))
	if len(got) < 2 || got[0] != evActive || got[1] != evViewerCount || heartbeats < 2 || raw[0] != "retry: 1000" {
		t.Errorf("events %v, %d heartbeats, first line %q", got, heartbeats, raw[0])
	}
}
