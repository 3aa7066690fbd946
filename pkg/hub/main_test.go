package hub

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Drop summaries every 10 ms so log tests finish quickly; the
	// once-a-second rate itself is a constant, not behaviour worth waiting for.
	dropLogInterval = 10 * time.Millisecond
	goleak.VerifyTestMain(m)
}
