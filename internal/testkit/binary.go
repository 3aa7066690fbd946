package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinDirEnv names a directory of prebuilt binaries, each named as `go
// build -o DIR/ PKG` names it (the last element of PKG); BuildBinary takes
// a package's binary from there when it is present. Not SRTWHEP_*: the
// server reads every such variable as configuration and refuses unknown
// ones, and it runs with the test's environment.
const BinDirEnv = "TESTKIT_BINDIR"

// built caches one binary per main package for the whole test process: a
// build costs seconds even from Go's cache, and the tests that need the
// binary are many.
var built struct {
	mu   sync.Mutex
	dir  string            // under os.TempDir, removed by Main
	bins map[string]string // package path → binary
	errs map[string]string // package path → why the build failed
}

// BuildBinary builds the main package pkg (a path relative to the module
// root, such as "./cmd/srtwhep") once per test process and returns the
// binary's path. The package's TestMain must be Main, which removes it.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if msg, ok := built.errs[pkg]; ok {
		t.Fatal(msg)
	}
	bin, msg := build(pkg)
	if msg != "" {
		if built.errs == nil {
			built.errs = map[string]string{}
		}
		built.errs[pkg] = msg
		t.Fatal(msg)
	}
	if built.bins == nil {
		built.bins = map[string]string{}
	}
	built.bins[pkg] = bin
	return bin
}

func build(pkg string) (bin, failure string) {
	// make test builds every main package once before its test processes
	// start side by side (scripts/test.sh): each would otherwise link its
	// own copy and, on a cold build cache, compile the same packages at
	// the same time as the others.
	if dir := os.Getenv(BinDirEnv); dir != "" {
		bin = filepath.Join(dir, path.Base(pkg))
		if info, err := os.Stat(bin); err == nil && info.Mode().IsRegular() {
			return bin, ""
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", "go not found on PATH: install Go from https://go.dev/dl (see go.mod for the version)"
	}
	// The test runs in its package's directory; the module root is where
	// package paths like ./cmd/srtwhep are anchored.
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	mod := string(bytes.TrimSpace(gomod))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", "go env GOMOD found no module: run the tests inside the srtwhep module"
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "srtwhep-testkit-")
		if err != nil {
			return "", "temp dir for test binaries: " + err.Error()
		}
		built.dir = dir
	}
	bin = filepath.Join(built.dir, strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_"))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "go build " + pkg + ": " + err.Error() +
			" (cgo needs libsrt: apt-get install -y libsrt-openssl-dev, or make deps MODE=build)\n" + string(out)
	}
	return bin, ""
}

// removeBinaries deletes what BuildBinary built, once m.Run has returned:
// the binaries outlive single tests on purpose.
func removeBinaries() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	built.dir, built.bins, built.errs = "", nil, nil
}
