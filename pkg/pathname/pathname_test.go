package pathname

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	long := strings.Repeat("a", MaxLen)
	cases := []struct {
		name    string
		problem string // "" = valid; else a substring of the error
	}{
		{"live/cam1", ""},
		{"a", ""},
		{"Events/2026-01/key_note.v2~x", ""},
		{long, ""},
		{long + "a", "129 bytes long"},
		{"", "empty"},
		{"/live", "starts or ends"},
		{"live/", "starts or ends"},
		{"live//cam", "empty segment"},
		{"live/./cam", "'.' segment"},
		{"../etc", "'..' segment"},
		{"live cam", `' ' is not allowed`},
		{"live/cäm", `'ä' is not allowed`},
		{"live%2Fcam", `'%' is not allowed`},
		{"live\x00", `'\x00' is not allowed`},
	}
	for _, c := range cases {
		err := Check(c.name)
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", c.name, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("Check(%q) = %v, want an error containing %q", c.name, err, c.problem)
		case c.problem != "" && !errors.Is(err, ErrInvalid):
			t.Errorf("Check(%q) = %v, does not wrap ErrInvalid", c.name, err)
		}
	}
}

// A hostile name is never echoed beyond the cap, whatever its size.
func TestErrorsAreClipped(t *testing.T) {
	for _, n := range []int{MaxLen + 1, 10 << 10, 1 << 20} {
		err := Check(strings.Repeat("x", n))
		if err == nil || len(err.Error()) > MaxLen+120 {
			t.Errorf("%d-byte name: error of %d bytes: %.200v", n, len(err.Error()), err)
		}
	}
	// Clipping never splits a UTF-8 sequence.
	q := Quote(strings.Repeat("ä", MaxLen))
	if strings.Contains(q, `\x`) || !strings.HasSuffix(q, `"…`) {
		t.Errorf("Quote of a long UTF-8 name = %s", q)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"live/cam1", "", "a//b", "../x", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Check(s)
		if err == nil && (len(s) > MaxLen || strings.Contains(s, "//")) {
			t.Fatalf("accepted %q", s)
		}
		// At most MaxLen bytes of the name, each escaped to at most 4.
		if err != nil && len(err.Error()) > 4*MaxLen+200 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
	})
}
