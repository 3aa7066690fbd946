package audio

import (
	"testing"

	"go.uber.org/goleak"
)

// The Transcoder promises no goroutines of its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
