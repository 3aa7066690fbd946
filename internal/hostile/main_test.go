package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			fmt.Fprintln(os.Stderr, "ffmpeg not found: run `make test` (it installs it) or `apt-get install -y ffmpeg`")
			os.Exit(1)
		}
		srt.Init()
	}, srt.Cleanup)
}
