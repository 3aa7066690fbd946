package testkit

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main is TestMain for packages that need more than goleak.VerifyTestMain:
// setup runs before the tests and teardown after them (either may be nil),
// then what BuildBinary built and MakeClip made is removed and, if every
// test passed, leaked goroutines fail the run. After a failure the
// failure is the news, and a failed test may well leave goroutines
// behind.
func Main(m *testing.M, setup, teardown func()) {
	if setup != nil {
		setup()
	}
	code := m.Run()
	if teardown != nil {
		teardown()
	}
	removeBinaries()
	removeClips()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
