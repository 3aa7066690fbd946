package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse: no input panics, and whatever parse accepts passes Validate
// and survives a Dump/parse round trip.
func FuzzParse(f *testing.F) {
	for _, tc := range errorCases {
		f.Add([]byte(tc.yaml))
	}
	if data, err := os.ReadFile(exampleFile); err == nil {
		f.Add(data)
	}
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nwebrtc: {publicIPs: [*b, *b]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse("f.yml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yml") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		out, err := c.Dump()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parse("dump.yml", out); err != nil {
			t.Fatalf("dump of an accepted config does not parse: %v\n%s", err, out)
		}
	})
}
