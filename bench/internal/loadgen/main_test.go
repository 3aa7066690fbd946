package loadgen

import (
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, nil, nil)
}
