package whep

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// ProblemTypeBase prefixes the type URI of every problem the WHEP endpoints
// answer (RFC 9457 §3.1.1): the slug after it is stable, so a client can
// branch on it (the player does for no-h264) instead of parsing the detail.
// The URI identifies; it need not resolve.
const ProblemTypeBase = "https://srtwhep.dev/problems/"

const mimeProblem = "application/problem+json"

// Problem slugs. Each names one cause a client may act on differently; the
// title is the same for every occurrence of a slug, the detail says what
// this request got wrong and how to fix it.
const (
	probUnsupportedType = "unsupported-media-type"
	probTooLarge        = "body-too-large"
	probUnreadable      = "body-unreadable"
	probEmptyOffer      = "empty-offer"
	probNotSDP          = "not-sdp"
	probBadOffer        = "bad-offer"
	probNoH264          = "no-h264"
	probVideoCodec      = "video-codec-unsupported"
	probBadPath         = "invalid-path"
	probNoPublisher     = "no-publisher"
	probRefused         = "publisher-refused"
	probNoPicture       = "no-decodable-picture"
	probSourceRefused   = "source-refused"
	probSourceTimeout   = "source-timeout"
	probSourceFailed    = "source-unavailable"
	probPathFull        = "path-full"
	probServerFull      = "server-full"
	probHandshakes      = "handshake-limit"
	probUnavailable     = "unavailable"
	probUnauthorized    = "unauthorized"
	probForbidden       = "forbidden"
	probThrottled       = "throttled"
	probOfferRate       = "offer-rate"
	// probICENotStarted names, in the log only, an answered offer closed
	// because its viewer sent no ICE check: the client had its 201.
	probICENotStarted = "ice-not-started"
	probNoSession     = "no-session"
	probEmptyFrag     = "empty-sdpfrag"
	probBadFrag       = "bad-sdpfrag"
	probETagMismatch  = "etag-mismatch"
	probIfMatchNeeded = "if-match-required"
	probRestartFailed = "ice-restart-failed"
	probInternal      = "internal"
)

var problemTitles = map[string]string{
	probUnsupportedType: "Wrong Content-Type",
	probTooLarge:        "Request body too large",
	probUnreadable:      "Request body unreadable",
	probEmptyOffer:      "Empty offer",
	probNotSDP:          "Body is not SDP",
	probBadOffer:        "Offer refused",
	probNoH264:          "Browser offers no H.264",
	probVideoCodec:      "Browser cannot decode this path's video",
	probBadPath:         "Invalid path name",
	probNoPublisher:     "No publisher on this path",
	probRefused:         "The path's publisher was refused",
	probNoPicture:       "The path's stream has no decodable picture",
	probSourceRefused:   "Origin has no such stream",
	probSourceTimeout:   "Origin did not answer in time",
	probSourceFailed:    "Origin unavailable",
	probPathFull:        "Path at its viewer limit",
	probServerFull:      "Server at capacity",
	probHandshakes:      "Too many handshakes in progress",
	probUnavailable:     "Server not serving",
	probUnauthorized:    "Unauthorized",
	probForbidden:       "Forbidden",
	probThrottled:       "Too many failed attempts",
	probOfferRate:       "Too many offers",
	probNoSession:       "No such session",
	probEmptyFrag:       "Empty sdpfrag",
	probBadFrag:         "Malformed sdpfrag",
	probETagMismatch:    "Stale ETag",
	probIfMatchNeeded:   "If-Match required",
	probRestartFailed:   "ICE restart failed",
	probInternal:        "Internal error",
}

// problem is an RFC 9457 problem details object. retry_after repeats the
// Retry-After header in the body: a cross-origin page reads the header only
// when it is exposed, and a log of the body alone still says when to retry.
type problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

// httpError writes every error answer of the WHEP endpoints: a problem
// details body, or on a client that prefers text/plain (curl -H 'Accept:
// text/plain'), the detail as one line. A Retry-After header set before it
// is called is mirrored into the body.
func httpError(w http.ResponseWriter, r *http.Request, code int, slug, detail string) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// One line, whatever a wrapped parser error contained.
	detail = strings.Join(strings.Fields(detail), " ")
	if r != nil && prefersText(r.Header.Values("Accept")) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, detail+"\n")
		return
	}
	p := problem{Type: ProblemTypeBase + slug, Title: problemTitles[slug], Status: code, Detail: detail}
	if p.Title == "" {
		p.Title = http.StatusText(code)
	}
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n > 0 {
		p.RetryAfter = n
	}
	h.Set("Content-Type", mimeProblem)
	w.WriteHeader(code)
	// Quotes and <> as they are: the body is read by people in curl and
	// logs, and no HTML page embeds it.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
}

// prefersText reports whether the Accept fields rank text/plain above
// problem JSON. Each side takes the quality of its most specific matching
// range (RFC 9110 §12.5.1); a tie, no Accept at all, and curl's default
// */* get JSON, the format the WHEP contract documents.
func prefersText(accept []string) bool {
	if len(accept) == 0 {
		return false
	}
	textQ, jsonQ := -1.0, -1.0
	textSpec, jsonSpec := -1, -1
	for _, field := range accept {
		for _, part := range strings.Split(field, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			if spec := matchSpecificity(mt, "text", "plain"); spec > textSpec {
				textSpec, textQ = spec, q
			}
			spec := max(matchSpecificity(mt, "application", "problem+json"), matchSpecificity(mt, "application", "json"))
			if spec > jsonSpec {
				jsonSpec, jsonQ = spec, q
			}
		}
	}
	return textQ > 0 && textQ > max(jsonQ, 0)
}

// matchSpecificity is how specifically the range mt matches typ/sub: 2 for
// the exact type, 1 for typ/*, 0 for */*, -1 for no match.
func matchSpecificity(mt, typ, sub string) int {
	switch mt {
	case typ + "/" + sub:
		return 2
	case typ + "/*":
		return 1
	case "*/*":
		return 0
	}
	return -1
}
