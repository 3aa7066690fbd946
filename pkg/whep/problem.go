package whep

import (
	"net/http"

	"github.com/srtwhep/srtwhep/pkg/httpproblem"
)

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

// httpError writes every error answer of the WHEP endpoints (pkg/httpproblem).
func httpError(w http.ResponseWriter, r *http.Request, code int, slug, detail string) {
	httpproblem.Write(w, r, code, slug, problemTitles[slug], detail)
}
