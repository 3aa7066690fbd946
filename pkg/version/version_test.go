package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install of a tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"},
		{"module version beats the revision", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}}}, "v1.2.0"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "0123456789ab"},
		{"checkout with edits", debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, "0123456789ab-dirty"},
		{"-buildvcs=false", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"nothing recorded", debug.BuildInfo{}, "dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(&tc.bi); got != tc.want {
				t.Errorf("fromBuildInfo = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLinkerValueWins: a version set with -ldflags -X is reported as is.
func TestLinkerValueWins(t *testing.T) {
	t.Cleanup(func() { Version = "" })
	Version = "v9.9.9-3-gabcdef0-dirty"
	if got := String(); got != Version {
		t.Errorf("String() = %q, want %q", got, Version)
	}
}
