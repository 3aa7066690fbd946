// Package testkit holds the helpers that tests in several packages share:
// polling with a deadline, a log buffer tests can wait on, a real pion
// offerer, ffmpeg and child-process runners, and the real srtwhep binary
// started on :0 ports with its bound addresses read back from -ready-file.
//
// Everything here fails the test (never skips it) when a tool is missing,
// naming how to install it: a skipped test cannot fail.
package testkit
