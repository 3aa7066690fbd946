package testkit

import "os"

// MediaPlaneEnv names the variable that runs the WHEP tests (pkg/whep and
// the end-to-end tests) on one media plane: "own" or "pion"; unset, they
// run on the server's default. It lacks the SRTWHEP_ prefix on purpose:
// the server reads every SRTWHEP_* variable as a config override and
// refuses unknown ones.
const MediaPlaneEnv = "TEST_MEDIAPLANE"

// MediaPlane is the media plane the tests should use, "" for the
// server's default.
func MediaPlane() string { return os.Getenv(MediaPlaneEnv) }

// MediaPlaneYAML is the webrtc section's line that picks MediaPlane,
// indented for that section, or "" for the default.
func MediaPlaneYAML() string {
	if p := MediaPlane(); p != "" {
		return "  mediaPlane: " + p + "\n"
	}
	return ""
}
