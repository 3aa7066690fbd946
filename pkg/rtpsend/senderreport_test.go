package rtpsend

import (
	"testing"
	"time"
)

func TestNTPTime(t *testing.T) {
	// 1970-01-01T00:00:00.5Z is NTP second 2208988800 and half a second.
	got := ntpTime(time.Unix(0, 500_000_000))
	if want := uint64(2208988800)<<32 | 1<<31; got != want {
		t.Fatalf("ntpTime = %#x, want %#x", got, want)
	}
}
