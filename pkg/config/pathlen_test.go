package config

import (
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// A path name longer than any edge accepts (pathname.MaxLen) is refused at
// load time instead of configuring a path nobody could reach.
func TestPathNameLength(t *testing.T) {
	ok := strings.Repeat("a", pathname.MaxLen)
	if _, err := parse("srtwhep.yml", []byte("paths:\n  "+ok+": {}\n")); err != nil {
		t.Errorf("%d-byte path name: %v", pathname.MaxLen, err)
	}
	_, err := parse("srtwhep.yml", []byte("paths:\n  "+ok+"a: {}\n"))
	if err == nil || !strings.Contains(err.Error(), "srtwhep.yml:2: paths:") || !strings.Contains(err.Error(), "129 bytes long, more than the 128") {
		t.Errorf("%d-byte path name: %v", pathname.MaxLen+1, err)
	}
}
