package config

// Bounds of a socket buffer: below 64 KiB a burst of one video frame's
// packets overflows it; above 1 GiB is a typo (the kernel would cap it at
// the sysctl maximum anyway).
const (
	minSocketBuffer = 64 << 10
	maxSocketBuffer = 1 << 30
)

func (v *validator) socketBuffer(key string, n int) {
	if n < minSocketBuffer || n > maxSocketBuffer {
		v.fail(key, "%d bytes is outside %d to %d; use e.g. 4194304 (4 MiB), and raise net.core.rmem_max/wmem_max to match", n, minSocketBuffer, maxSocketBuffer)
	}
}
