package srt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// Modes a StreamID can carry: ModePublish sends a stream to the server,
// ModeRead and ModeRequest read one (when the server has Config.ServeRead).
const (
	ModePublish = "publish"
	ModeRead    = "read"    // from the short form "read:PATH"
	ModeRequest = "request" // the SRT access-control default for m=
)

// StreamID is the parsed SRT stream id of a connecting caller.
type StreamID struct {
	Mode string // ModePublish, ModeRead, ModeRequest or another m= value
	Path string
	User string
	Pass string
}

// Reading reports a caller that wants to read the path: the short form's
// read: or the access-control form's m=request (its default).
func (id StreamID) Reading() bool { return id.Mode == ModeRead || id.Mode == ModeRequest }

// streamIDSyntax is quoted in every parse error and every rejection log so a
// user who typed it wrong sees the fix in the same line.
const streamIDSyntax = `streamid must be "publish:PATH" or "#!::r=PATH,m=publish" (to read: "read:PATH" or "#!::r=PATH,m=request")`

// maxStreamIDLen is SRT's own limit (SRTO_STREAMID holds at most 512 bytes).
const maxStreamIDLen = 512

// ParseStreamID accepts the short form `publish:PATH[:USER:PASS]` (also
// `read:PATH`) and the SRT access-control form
// `#!::r=PATH,m=publish[,u=USER,s=PASS]` with keys in any order.
func ParseStreamID(s string) (StreamID, error) {
	var (
		id  StreamID
		err error
	)
	switch {
	case s == "":
		err = errors.New("the caller sent no streamid; add ?streamid=publish:PATH to the srt:// URL")
	case len(s) > maxStreamIDLen:
		err = fmt.Errorf("longer than %d bytes", maxStreamIDLen)
	case strings.HasPrefix(s, "#!::"):
		id, err = parseAccessControl(s[len("#!::"):])
	default:
		id, err = parseShort(s)
	}
	if err == nil {
		err = checkPath(id.Path)
	}
	if err != nil {
		// The error ends up in logs: never echo a password.
		return StreamID{}, fmt.Errorf("%s (got %s): %w", streamIDSyntax, quoteShort(redactStreamID(s)), err)
	}
	return id, nil
}

func parseShort(s string) (StreamID, error) {
	parts := strings.Split(s, ":")
	var id StreamID
	switch parts[0] {
	case ModePublish, ModeRead:
		id.Mode = parts[0]
	default:
		return id, fmt.Errorf("unknown action %q", parts[0])
	}
	switch len(parts) {
	case 2:
		id.Path = parts[1]
	case 4:
		id.Path, id.User, id.Pass = parts[1], parts[2], parts[3]
		if id.User == "" {
			return id, errors.New("empty user name")
		}
	default:
		return id, errors.New("credentials must be given as ACTION:PATH:USER:PASS")
	}
	return id, nil
}

func parseAccessControl(s string) (StreamID, error) {
	id := StreamID{Mode: ModeRequest}
	seen := map[string]bool{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return id, fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		if seen[k] {
			return id, fmt.Errorf("key %q given twice", k)
		}
		seen[k] = true
		switch k {
		case "r":
			id.Path = v
		case "m":
			if v == "" {
				return id, errors.New("empty m= (use m=publish)")
			}
			id.Mode = v
		case "u":
			id.User = v
		case "s":
			id.Pass = v
		case "t":
			// Only live streams are served; t=file or t=auth cannot be.
			if v != "stream" {
				return id, fmt.Errorf("t=%s is not supported (only t=stream)", v)
			}
		default:
			// Other standard keys (h= host, ...) do not change what we
			// serve; ignoring them keeps generic SRT tools working.
		}
	}
	if !seen["r"] {
		return id, errors.New("missing r=PATH")
	}
	return id, nil
}

// checkPath keeps paths usable as URL segments of the WHEP endpoint
// (/PATH/whep) and as metric label values.
func checkPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	// Checked first so that no message below quotes more than the cap.
	if len(p) > pathname.MaxLen {
		return fmt.Errorf("path is %d bytes long, more than the %d allowed", len(p), pathname.MaxLen)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			return fmt.Errorf("path %q has an empty segment (leading, trailing or double slash)", p)
		}
		if seg == "." || seg == ".." {
			return fmt.Errorf("path %q has a %q segment", p, seg)
		}
		for _, c := range seg {
			if !pathname.Rune(c) {
				return fmt.Errorf("path %q has the character %q (allowed: letters, digits, - _ . ~ /)", p, c)
			}
		}
	}
	return nil
}

// quoteShort keeps a hostile or huge streamid from flooding the log.
func quoteShort(s string) string {
	const limit = 80
	if len(s) > limit {
		return fmt.Sprintf("%q…", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
