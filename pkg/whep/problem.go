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

// answer is how the WHEP endpoints answer a slug, and how a POST refused
// with it is counted: the one table of refusals.
type answer struct {
	status int
	title  string
	// retryAfter is the Retry-After, in seconds, unless the caller set one
	// (a computed wait); "" for none.
	retryAfter string
	// reason is the metrics' reason label a refused POST is counted under
	// (rejectReasons); noReject counts nothing.
	reason rejectReason
}

// Retry-After values: a full path frees up when someone leaves, which
// takes a while; a handshake slot within a second or two. A publisher may
// (re)connect any moment; the player's own back-off stretches the wait
// while none does. The fix of a stream problem needs a person at the
// encoder, so the player need not ask every second; a publisher that comes
// back fixed is still found within a few.
const (
	retryAfterFull        = "10"
	retryAfterHandshakes  = "2"
	retryAfterStarting    = "1"
	retryAfterNoPublisher = "1"
	retryAfterProblem     = "3"
)

var answers = map[string]answer{
	probUnsupportedType: {http.StatusUnsupportedMediaType, "Wrong Content-Type", "", rejectBadOffer},
	probTooLarge:        {http.StatusRequestEntityTooLarge, "Request body too large", "", rejectBadOffer},
	probUnreadable:      {http.StatusBadRequest, "Request body unreadable", "", rejectBadOffer},
	probEmptyOffer:      {http.StatusBadRequest, "Empty offer", "", rejectBadOffer},
	probNotSDP:          {http.StatusBadRequest, "Body is not SDP", "", rejectBadOffer},
	probBadOffer:        {http.StatusBadRequest, "Offer refused", "", rejectBadOffer},
	probNoH264:          {http.StatusBadRequest, "Browser offers no H.264", "", rejectBadOffer},
	probVideoCodec:      {http.StatusConflict, "Browser cannot decode this path's video", "", rejectBadOffer},
	probBadPath:         {http.StatusNotFound, "Invalid path name", "", rejectBadOffer},
	probNoPublisher:     {http.StatusConflict, "No publisher on this path", retryAfterNoPublisher, rejectNoPublisher},
	probRefused:         {http.StatusConflict, "The path's publisher was refused", retryAfterProblem, rejectNoPublisher},
	probNoPicture:       {http.StatusConflict, "The path's stream has no decodable picture", retryAfterProblem, rejectNoPublisher},
	probSourceRefused:   {http.StatusNotFound, "Origin has no such stream", "", rejectNoPublisher},
	probSourceTimeout:   {http.StatusGatewayTimeout, "Origin did not answer in time", retryAfterHandshakes, rejectNoPublisher},
	probSourceFailed:    {http.StatusBadGateway, "Origin unavailable", "", rejectNoPublisher},
	probPathFull:        {http.StatusServiceUnavailable, "Path at its viewer limit", retryAfterFull, rejectReaderCap},
	probServerFull:      {http.StatusServiceUnavailable, "Server at capacity", retryAfterFull, rejectServerFull},
	probHandshakes:      {http.StatusServiceUnavailable, "Too many handshakes in progress", retryAfterHandshakes, rejectPendingLimit},
	probUnavailable:     {http.StatusServiceUnavailable, "Server not serving", retryAfterStarting, noReject},
	probUnauthorized:    {http.StatusUnauthorized, "Unauthorized", "", rejectAuth},
	probForbidden:       {http.StatusForbidden, "Forbidden", "", rejectAuth},
	probThrottled:       {http.StatusTooManyRequests, "Too many failed attempts", "", rejectAuth},
	probOfferRate:       {http.StatusTooManyRequests, "Too many offers", "", rejectOfferRate},
	probICENotStarted:   {http.StatusCreated, "", "", noReject},
	probNoSession:       {http.StatusNotFound, "No such session", "", noReject},
	probEmptyFrag:       {http.StatusBadRequest, "Empty sdpfrag", "", noReject},
	probBadFrag:         {http.StatusBadRequest, "Malformed sdpfrag", "", noReject},
	probETagMismatch:    {http.StatusPreconditionFailed, "Stale ETag", "", noReject},
	probIfMatchNeeded:   {http.StatusPreconditionRequired, "If-Match required", "", noReject},
	probRestartFailed:   {http.StatusInternalServerError, "ICE restart failed", "", noReject},
	probInternal:        {http.StatusInternalServerError, "Internal error", "", noReject},
}

// httpError writes every error answer of the WHEP endpoints
// (pkg/httpproblem) as the table says.
func httpError(w http.ResponseWriter, r *http.Request, slug, detail string) {
	a := answers[slug]
	if a.retryAfter != "" && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	httpproblem.Write(w, r, a.status, slug, a.title, detail)
}

// refuse answers a POST that gets no session, counts it and logs it,
// rate-limited (pkg/refusallog). offer is the body as read, "" before it was;
// path is "" until the name was checked.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, path, slug, detail, offer string) {
	a := answers[slug]
	s.stats.reject(a.reason)
	s.refusals.Refused(r, path, a.status, slug, detail, offer)
	httpError(w, r, slug, detail)
}
