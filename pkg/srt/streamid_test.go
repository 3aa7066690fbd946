package srt

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

var streamIDCases = []struct {
	name string
	in   string
	want StreamID
	err  string // substring of the error; "" = must parse
}{
	{"short publish", "publish:live/t", StreamID{Mode: ModePublish, Path: "live/t"}, ""},
	{"short one segment", "publish:cam", StreamID{Mode: ModePublish, Path: "cam"}, ""},
	{"short with creds", "publish:live/t:alice:s3cret", StreamID{Mode: ModePublish, Path: "live/t", User: "alice", Pass: "s3cret"}, ""},
	{"short read", "read:live/t", StreamID{Mode: ModeRead, Path: "live/t"}, ""},
	{"keyed publish", "#!::r=live/t,m=publish", StreamID{Mode: ModePublish, Path: "live/t"}, ""},
	{"keyed any order", "#!::m=publish,u=bob,r=a/b/c,s=pw", StreamID{Mode: ModePublish, Path: "a/b/c", User: "bob", Pass: "pw"}, ""},
	{"keyed default mode", "#!::r=live/t", StreamID{Mode: ModeRequest, Path: "live/t"}, ""},
	{"keyed ignores host", "#!::h=example.com,r=x,m=publish", StreamID{Mode: ModePublish, Path: "x"}, ""},
	{"keyed t=stream", "#!::r=x,m=publish,t=stream", StreamID{Mode: ModePublish, Path: "x"}, ""},
	{"keyed bidirectional", "#!::r=x,m=bidirectional", StreamID{Mode: "bidirectional", Path: "x"}, ""},

	{"empty", "", StreamID{}, "sent no streamid"},
	{"bare path", "live/t", StreamID{}, `unknown action "live/t"`},
	{"unknown action", "play:live/t", StreamID{}, `unknown action "play"`},
	{"short empty path", "publish:", StreamID{}, "empty path"},
	{"short user only", "publish:live/t:alice", StreamID{}, "ACTION:PATH:USER:PASS"},
	{"short too many", "publish:a:b:c:d", StreamID{}, "ACTION:PATH:USER:PASS"},
	{"short empty user", "publish:a::pw", StreamID{}, "empty user"},
	{"leading slash", "publish:/live", StreamID{}, "empty segment"},
	{"trailing slash", "publish:live/", StreamID{}, "empty segment"},
	{"double slash", "publish:a//b", StreamID{}, "empty segment"},
	{"dotdot", "publish:a/../b", StreamID{}, `".." segment`},
	{"space", "publish:a b", StreamID{}, "character ' '"},
	{"query", "publish:a?x=1", StreamID{}, "character '?'"},
	{"path at the cap", "publish:" + strings.Repeat("p", 128), StreamID{Mode: ModePublish, Path: strings.Repeat("p", 128)}, ""},
	{"path over the cap", "publish:" + strings.Repeat("p", 129), StreamID{}, "129 bytes long, more than the 128 allowed"},
	{"keyed path over the cap", "#!::m=publish,r=" + strings.Repeat("p", 300), StreamID{}, "more than the 128 allowed"},
	{"keyed no r", "#!::m=publish", StreamID{}, "missing r=PATH"},
	{"keyed empty r", "#!::r=,m=publish", StreamID{}, "empty path"},
	{"keyed not kv", "#!::r=x,publish", StreamID{}, `"publish" is not KEY=VALUE`},
	{"keyed dup", "#!::r=x,r=y", StreamID{}, `key "r" given twice`},
	{"keyed empty m", "#!::r=x,m=", StreamID{}, "empty m="},
	{"keyed file", "#!::r=x,m=publish,t=file", StreamID{}, "t=file is not supported"},
	{"keyed empty", "#!::", StreamID{}, "is not KEY=VALUE"},
	{"too long", "publish:" + strings.Repeat("a", 600), StreamID{}, "longer than 512"},
}

func TestParseStreamID(t *testing.T) {
	for _, tc := range streamIDCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStreamID(tc.in)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("ParseStreamID(%q): %v", tc.in, err)
				}
				if got != tc.want {
					t.Fatalf("ParseStreamID(%q) = %+v, want %+v", tc.in, got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseStreamID(%q) = %+v, want error containing %q", tc.in, got, tc.err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseStreamID(%q) error %q does not contain %q", tc.in, err, tc.err)
			}
			wantPrefix := `streamid must be "publish:PATH" or "#!::r=PATH,m=publish" (to read: "read:PATH" or "#!::r=PATH,m=request") (got `
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Fatalf("error %q does not start with the expected syntax %q", err, wantPrefix)
			}
		})
	}
}

func FuzzParseStreamID(f *testing.F) {
	for _, tc := range streamIDCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseStreamID(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), streamIDSyntax) {
				t.Fatalf("error without the expected syntax: %v", err)
			}
			return
		}
		if id.Mode == "" {
			t.Fatalf("%q parsed with an empty mode", s)
		}
		if err := checkPath(id.Path); err != nil {
			t.Fatalf("%q parsed to a bad path: %v", s, err)
		}
		// Anything accepted must survive a round trip through the keyed form
		// when it has no characters the keyed syntax reserves.
		if strings.ContainsAny(id.Mode+id.User+id.Pass, ",=") {
			return
		}
		keyed := fmt.Sprintf("#!::r=%s,m=%s,u=%s,s=%s", id.Path, id.Mode, id.User, id.Pass)
		if len(keyed) > maxStreamIDLen {
			return // the keyed form is longer: a short form near the limit has no keyed twin
		}
		again, err := ParseStreamID(keyed)
		if err != nil || again != id {
			t.Fatalf("round trip of %q via %q: %+v, %v", s, keyed, again, err)
		}
	})
}

func TestRejectReason(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{hub.ErrPathBusy, RejectionReasonConflict},
		{fmt.Errorf("path %q: %w", "live/t", hub.ErrPathBusy), RejectionReasonConflict},
		{hub.ErrServerFull, srtgo.RejectionReasonOverload},
		{RejectError{Reason: srtgo.RejectionReasonUnauthorized, Msg: "bad password"}, srtgo.RejectionReasonUnauthorized},
		{&RejectError{Reason: srtgo.RejectionReasonNotFound, Msg: "no such path"}, srtgo.RejectionReasonNotFound},
		{fmt.Errorf("wrapped: %w", RejectError{Reason: 1234, Msg: "app"}), 1234},
		{errors.New("anything else"), srtgo.RejectionReasonForbidden},
	}
	for _, tc := range cases {
		if got := rejectReason(tc.err); got != tc.want {
			t.Errorf("rejectReason(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if RejectionReasonConflict != 1409 || RejectionReasonInternal != 1500 {
		t.Fatalf("reasons must match libsrt's access_control.h: conflict=%d internal=%d",
			RejectionReasonConflict, RejectionReasonInternal)
	}
}

func TestRedactStreamID(t *testing.T) {
	cases := map[string]string{
		"publish:live/t":               "publish:live/t",
		"publish:live/t:alice:s3cret":  "publish:live/t:alice:***",
		"publish:live/t:alice:a:b":     "publish:live/t:alice:***",
		"#!::r=x,m=publish,u=bob,s=pw": "#!::r=x,m=publish,u=bob,s=***",
		"#!::s=pw,r=x":                 "#!::s=***,r=x",
		"#!::r=x,m=publish":            "#!::r=x,m=publish",
	}
	for in, want := range cases {
		if got := redactStreamID(in); got != want {
			t.Errorf("redactStreamID(%q) = %q, want %q", in, got, want)
		}
	}
}
