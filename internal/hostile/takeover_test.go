package hostile

import (
	"errors"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// TestTakeoverFromAnotherAddress: on a path without publish credentials
// (the default config), a publisher from another address than the live
// one's is refused busy (1409) and the log says how to allow it; the live
// publisher's own address (an encoder reconnecting) takes the path over;
// the bystander notices nothing.
func TestTakeoverFromAnotherAddress(t *testing.T) {
	t.Parallel()
	const victim = "live/victim"
	srv := startServer(t, "")
	b := startBystander(t, srv)

	if _, err := publishFrom(t, srv, source(0), "publish:"+victim); err != nil {
		t.Fatalf("publisher from %v: %v", source(0), err)
	}
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path="+victim, "remote="+source(0).String())

	refused := 0
	for i := 1; i <= 3; i++ {
		_, err := publishFrom(t, srv, source(i), "publish:"+victim)
		var rej *srtcall.RejectedError
		if !errors.As(err, &rej) || rej.Reason != srt.RejectionReasonConflict {
			t.Fatalf("takeover from %v: %v, want refused with busy (1409)", source(i), err)
		}
		refused++
	}
	srv.WaitLog(t, 5*time.Second, "srt publisher rejected", "path="+victim, "remote="+source(1).String(),
		"overridePublisher: any")

	if _, err := publishFrom(t, srv, source(0), "publish:"+victim); err != nil {
		t.Fatalf("reconnect from the live address %v: %v", source(0), err)
	}
	srv.WaitLog(t, 15*time.Second, "publisher takes the path over", "path="+victim, "remote="+source(0).String(),
		"previous="+source(0).String())
	t.Logf("takeover of %s published from %v: %d of %d other sources refused busy (1409); the same address took it over",
		victim, source(0), refused, 3)
	b.waitWindow()
	b.Check(t)
}
