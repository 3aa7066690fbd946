//go:build !linux

package mmsg

// Supported reports whether this platform has the batched system calls.
// It does not: users keep a net-based path for it (see their *_other.go
// files), so nothing else is declared here.
const Supported = false
