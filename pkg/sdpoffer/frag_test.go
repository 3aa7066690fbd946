package sdpoffer

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

const fragCandidate = "candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host"

// fragCases are the fragment shapes RFC 8840 and RFC 9725 show, and the
// faults a PATCH may carry (pkg/whep's TestPatch sends the same bodies);
// wantErr "" means the fragment parses to want.
var fragCases = []struct {
	name, body string
	want       Frag
	wantErr    string
}{
	{"trickle", "a=" + fragCandidate + "\r\n", Frag{Candidates: []string{fragCandidate}}, ""},
	{"trickle end", "a=" + fragCandidate + "\r\na=end-of-candidates\r\n", Frag{Candidates: []string{fragCandidate}, End: true}, ""},
	{"restart", "a=ice-ufrag:newufrag\r\na=ice-pwd:newpasswordnewpasswordxx\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\na=" + fragCandidate + "\r\n",
		Frag{Ufrag: "newufrag", Pwd: "newpasswordnewpasswordxx", Candidates: []string{fragCandidate}}, ""},
	{"ufrag alone", "a=ice-ufrag:newufrag\r\n", Frag{Ufrag: "newufrag"}, ""},
	{"end alone", "a=end-of-candidates\r\n", Frag{End: true}, ""},
	// The parser keeps a candidate's text; whether it is one is the ICE
	// agent's to say.
	{"odd candidate", "a=candidate:nonsense\r\n", Frag{Candidates: []string{"candidate:nonsense"}}, ""},
	{"not SDP", "hello world", Frag{}, `line 1 "hello world" is not an SDP line`},
	{"blank", "\r\n", Frag{}, ErrEmptyFrag.Error()},
}

func TestParseFrag(t *testing.T) {
	for _, tc := range fragCases {
		got, err := ParseFrag(tc.body)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := ParseFrag(" \n\t\n"); !errors.Is(err, ErrEmptyFrag) {
		t.Errorf("white space alone: %v, want ErrEmptyFrag", err)
	}
	// A browser's fragment, with the lines a parser must skip.
	f, err := ParseFrag("a=ice-ufrag:EsAw\r\na=ice-pwd:P2uY\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\n" +
		"a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1\r\n" +
		"a=end-of-candidates\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if f.Ufrag != "EsAw" || f.Pwd != "P2uY" || len(f.Candidates) != 1 || !f.End ||
		!strings.HasPrefix(f.Candidates[0], "candidate:1387637174 1 udp") {
		t.Fatalf("got %+v", f)
	}
}

// TestFragVideo: a rendered fragment reads back as itself.
func TestFragVideo(t *testing.T) {
	f := Frag{Ufrag: "u", Pwd: "p", Candidates: []string{fragCandidate}, End: true}
	body := f.Video(102, "0")
	want := "a=ice-ufrag:u\r\na=ice-pwd:p\r\nm=video 9 UDP/TLS/RTP/SAVPF 102\r\na=mid:0\r\na=" + fragCandidate + "\r\na=end-of-candidates\r\n"
	if body != want {
		t.Fatalf("rendered %q, want %q", body, want)
	}
	if back, err := ParseFrag(body); err != nil || !reflect.DeepEqual(back, f) {
		t.Fatalf("read back %+v %v, want %+v", back, err, f)
	}
}

func FuzzParseFrag(f *testing.F) {
	for _, tc := range fragCases {
		f.Add(tc.body)
	}
	f.Add("a=ice-ufrag:a\r\na=ice-pwd:b\r\na=candidate:1 1 udp 1 127.0.0.1 1 typ host\r\na=end-of-candidates\r\n")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		fr, err := ParseFrag(s)
		if err != nil {
			return
		}
		for _, c := range fr.Candidates {
			if !strings.HasPrefix(c, "candidate:") {
				t.Fatalf("candidate %q lacks its prefix", c)
			}
		}
	})
}

// TestFuzzCorpusFrag writes the table's bodies as FuzzParseFrag's
// checked-in corpus when asked to (see testkit.SeedCorpus).
func TestFuzzCorpusFrag(t *testing.T) {
	var seeds [][]any
	for _, tc := range fragCases {
		seeds = append(seeds, []any{tc.body})
	}
	testkit.SeedCorpus(t, "FuzzParseFrag", seeds...)
}
