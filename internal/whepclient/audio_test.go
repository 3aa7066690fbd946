package whepclient

import (
	"testing"
	"time"
)

func TestSenderReportAt(t *testing.T) {
	// NTP second 2208988800 + 0.5 is 1970-01-01T00:00:00.5Z.
	base := time.Unix(0, 500_000_000)
	sr := SenderReport{RTPTime: 0xFFFFFF00, NTPTime: uint64(2208988800)<<32 | 1<<31, ClockRate: 48000}
	cases := []struct {
		name string
		ts   uint32
		want time.Time
	}{
		{"the report's own timestamp", 0xFFFFFF00, base},
		{"20 ms later, across the 32-bit wrap", 0xFFFFFF00 + 960 - 1<<32, base.Add(20 * time.Millisecond)},
		{"one second earlier", 0xFFFFFF00 - 48000, base.Add(-time.Second)},
	}
	for _, c := range cases {
		if got := sr.At(c.ts); !got.Equal(c.want) {
			t.Errorf("%s: At(%#x) = %v, want %v", c.name, c.ts, got, c.want)
		}
	}
	if got := sr.NTP(); !got.Equal(base) {
		t.Errorf("NTP() = %v, want %v", got, base)
	}
}
