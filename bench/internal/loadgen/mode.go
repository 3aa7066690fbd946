package loadgen

import "fmt"

// ViewerMode is how the viewers receive and what they send back. The
// server's cost per viewer depends on it, so every report names it.
type ViewerMode string

// Viewer modes.
const (
	// ModeBrowser receives and answers as a browser does: plain UDP
	// receive (one datagram per system-call entry), NACK and PLI offered,
	// an RTCP receiver report once a second, NACKs for missing packets.
	// Headline figures are measured this way.
	ModeBrowser ViewerMode = "browser"
	// ModeNone receives like ModeBrowser but sends no RTCP: it tells the
	// cost of the viewers' feedback apart from the cost of sending.
	ModeNone ViewerMode = "none"
	// ModeGRO sends no RTCP and receives with UDP_GRO. On loopback the
	// kernel then skips segmenting the server's GSO messages, a cost the
	// server pays on most real NICs, so its figures are lower than any
	// browser would cause: never a headline.
	ModeGRO ViewerMode = "gro"
)

// ViewerModes lists the modes, the headline one first.
var ViewerModes = []ViewerMode{ModeBrowser, ModeNone, ModeGRO}

// ParseViewerMode reads a mode name.
func ParseViewerMode(s string) (ViewerMode, error) {
	for _, m := range ViewerModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("loadgen: viewer mode %q: want browser (headline: RTCP reports once a second, NACKs, plain UDP), none (no RTCP) or gro (no RTCP, UDP_GRO receive)", s)
}

// ApplyMode sets the receive and feedback fields of c for m.
func (c *Config) ApplyMode(m ViewerMode) {
	c.Mode = m
	// NACK is offered in every mode: a server keeps retransmission state
	// for a viewer that offers it, whether or not it ever NACKs.
	c.NACK = true
	c.GRO = m == ModeGRO
	c.ReceiverReports = m == ModeBrowser
}
