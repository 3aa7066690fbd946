// Package version says which build of srtwhep is running, for -version and
// the srtwhep_build_info metric.
package version

import "runtime/debug"

// Version is set at link time by the Makefile, the Dockerfile and
// deploy.sh:
//
//	go build -ldflags "-X github.com/srtwhep/srtwhep/pkg/version.Version=v1.2.0" ./cmd/srtwhep
//
// It stays empty for a plain go build or go run.
var Version string

// String returns Version when the build set it, else what the Go toolchain
// recorded: the module version for `go install …@v1.2.0`, or the VCS
// revision (with "-dirty" for uncommitted changes) when the build could
// read .git. "dev" when neither is known, e.g. under -buildvcs=false.
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
