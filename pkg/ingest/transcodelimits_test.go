package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// A B-frame stream whose transcode the limits refuse keeps streaming but
// sends its viewers no video: the path's problem (what a WHEP POST
// answers with 409) names the setting, one line is logged, and nothing
// is held on the budget. With room in the budget the transcoder holds
// its share while it runs and gives it back when the publisher ends.
func TestTranscodeLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limits  TranscodeLimits
		reason  string // the problem; "" when the transcode runs
		setting string
	}{
		{"budget used up", TranscodeLimits{Budget: cpubudget.New(0.0001)}, ReasonTranscodeBudget, "transcode.maxCPUPercent"},
		// h264_bframes.ts is 320x240.
		{"picture too large", TranscodeLimits{Budget: cpubudget.New(1), MaxDecodeArea: 320 * 200}, ReasonPictureTooLarge, "transcode.maxDecodeArea"},
		{"fits", TranscodeLimits{Budget: cpubudget.New(1), MaxDecodeArea: 320 * 240}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{Transcode: tc.limits})
			data := clip(t, "h264_bframes.ts")
			c := newMemConn("live/tc", 5, data)
			starts := videoPES(data)
			c.pauseAt = starts[len(starts)-1]
			var viewer *hub.Reader
			r.onEvent = func(e events.Event) {
				if e.Kind == events.PublisherConnected {
					viewer = r.reader(t, "live/tc", (*hub.Reader).AttachAV)
				}
			}
			done := r.serve(t, c)
			<-c.paused
			budget := tc.limits.Budget.Stats()
			if tc.reason == "" {
				if budget.Holders != 1 || budget.Used <= 0 {
					t.Errorf("a running transcoder holds nothing on the budget: %+v", budget)
				}
			} else {
				p, ok := r.m.Problem("live/tc")
				t.Logf("problem: %+v", p)
				if !ok || !p.Live || p.Reason != tc.reason || !strings.Contains(p.Text, tc.setting) || !strings.Contains(p.Text, "bframes=0") {
					t.Errorf("problem %+v (%v), want a live %s naming %s and the encoder's fix", p, ok, tc.reason, tc.setting)
				}
				if budget.Holders != 0 {
					t.Errorf("a refused transcode holds %+v", budget)
				}
				// Only the pictures before the B-frames showed passed
				// through; nothing after.
				var video int
				testkit.WaitFor(t, 5*time.Second, "the queue", func() bool {
					v, _, _ := split(t, drain(viewer))
					video += len(v)
					return true
				})
				if video > 2 {
					t.Errorf("%d pictures reached the viewer of a withheld path, want only the 2 before the B-frames", video)
				}
				if lines := r.logs.Lines("video transcode refused", "reason="+tc.reason); len(lines) != 1 {
					t.Errorf("refusal lines %q, want one (the IDRs' retries are summarised)", lines)
				}
			}
			close(c.resume)
			if err := wait(t, done); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			if st := tc.limits.Budget.Stats(); st.Holders != 0 || st.Used != 0 {
				t.Errorf("after the publisher ended the budget holds %+v", st)
			}
			if _, ok := r.m.Problem("live/tc"); ok {
				t.Error("the refusal outlived its publisher")
			}
		})
	}
}
