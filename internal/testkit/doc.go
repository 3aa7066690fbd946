// Package testkit holds the helpers that tests in several packages share:
// polling with a deadline, a log buffer tests can wait on, a real pion
// offerer, ffmpeg and child-process runners, the real srtwhep binary
// started on :0 ports with its bound addresses read back from -ready-file,
// a /metrics scraper using Prometheus' own parser, and the ICE
// connectivity checks tests send the server themselves. TS streams built
// in-process live in the tsfixture subpackage, so that importing testkit
// does not link a TS muxer.
//
// Everything here fails the test (never skips it) when a tool is missing,
// naming how to install it: a skipped test cannot fail.
package testkit
