package sdpoffer

import (
	"errors"
	"fmt"
	"strings"
)

// Frag is an application/trickle-ice-sdpfrag body (RFC 8840): what a
// viewer's PATCH carries after its offer, trickled candidates or the
// credentials of an ICE restart, and what the restart's answer carries
// back.
type Frag struct {
	Ufrag, Pwd string
	Candidates []string // "candidate:…" values
	End        bool     // a=end-of-candidates
}

// ErrEmptyFrag is ParseFrag's answer to a body without a single SDP line.
var ErrEmptyFrag = errors.New("empty")

// ParseFrag reads an SDP fragment leniently: unknown lines are ignored,
// but anything that is not an SDP line is an error that names the line.
func ParseFrag(body string) (Frag, error) {
	var f Frag
	n := 0
	for i, l := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if len(l) < 2 || l[1] != '=' || l[0] < 'a' || l[0] > 'z' {
			return Frag{}, fmt.Errorf("line %d %q is not an SDP line (want x=value)", i+1, l)
		}
		n++
		switch {
		case strings.HasPrefix(l, "a=ice-ufrag:"):
			f.Ufrag = strings.TrimPrefix(l, "a=ice-ufrag:")
		case strings.HasPrefix(l, "a=ice-pwd:"):
			f.Pwd = strings.TrimPrefix(l, "a=ice-pwd:")
		case strings.HasPrefix(l, "a=candidate:"):
			f.Candidates = append(f.Candidates, strings.TrimPrefix(l, "a="))
		case l == "a=end-of-candidates":
			f.End = true
		}
	}
	if n == 0 {
		return Frag{}, ErrEmptyFrag
	}
	return f, nil
}

// Video renders f in a video m-section (payload type pt, mid when not
// ""), as RFC 8840 lays fragments out: the credentials first, then the
// section's candidates. The answer to an ICE restart is one.
func (f Frag) Video(pt uint8, mid string) string {
	var b strings.Builder
	b.WriteString("a=ice-ufrag:" + f.Ufrag + "\r\n")
	b.WriteString("a=ice-pwd:" + f.Pwd + "\r\n")
	fmt.Fprintf(&b, "m=video 9 UDP/TLS/RTP/SAVPF %d\r\n", pt)
	if mid != "" {
		b.WriteString("a=mid:" + mid + "\r\n")
	}
	for _, c := range f.Candidates {
		b.WriteString("a=" + c + "\r\n")
	}
	if f.End {
		b.WriteString("a=end-of-candidates\r\n")
	}
	return b.String()
}
