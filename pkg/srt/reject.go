package srt

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// Reject reasons from libsrt's access_control.h that srtgo has no constant
// for. The values are SRT's (SRT_REJX_*), so any SRT caller can decode them.
var (
	// RejectionReasonConflict (SRT_REJX_CONFLICT, 1409): the resource is
	// locked for modification — m=publish to a path that already has a
	// publisher.
	RejectionReasonConflict = srtgo.RejectionReasonPredefined + 409
	// RejectionReasonInternal (SRT_REJX_ISE, 1500): the server failed.
	RejectionReasonInternal = srtgo.RejectionReasonPredefined + 500
)

// RejectError is returned by Config.Admit to refuse a caller with a precise
// SRT reject reason (a srtgo.RejectionReason* value or 1000+ app code).
type RejectError struct {
	Reason int
	Msg    string
}

func (e RejectError) Error() string {
	return fmt.Sprintf("%s: %s", reasonName(e.Reason), e.Msg)
}

// rejectReason maps an Admit error to the SRT reject reason the caller sees.
// This is the only place policy decisions and hub errors become SRT reasons.
func rejectReason(err error) int {
	var rv RejectError
	if errors.As(err, &rv) {
		return rv.Reason
	}
	var rp *RejectError
	if errors.As(err, &rp) && rp != nil {
		return rp.Reason
	}
	var tm ErrTooManyPublishers
	if errors.As(err, &tm) {
		return srtgo.RejectionReasonOverload
	}
	if d := auth.AsDenied(err); d != nil {
		switch d.Reason {
		case auth.ReasonForbidden:
			return srtgo.RejectionReasonForbidden
		default: // unauthorized, throttled, hook denied
			return srtgo.RejectionReasonUnauthorized
		}
	}
	switch {
	case errors.Is(err, hub.ErrPathBusy):
		return RejectionReasonConflict
	case errors.Is(err, hub.ErrNoPublisher):
		return srtgo.RejectionReasonNotFound
	case errors.Is(err, hub.ErrServerFull), errors.Is(err, hub.ErrPathFull):
		return srtgo.RejectionReasonOverload
	}
	return srtgo.RejectionReasonForbidden
}

// reasonName spells a reject reason for logs: "bad request (1400)".
func reasonName(r int) string {
	names := map[int]string{
		srtgo.RejectionReasonBadRequest:   "bad request",
		srtgo.RejectionReasonUnauthorized: "unauthorized",
		srtgo.RejectionReasonOverload:     "overload",
		srtgo.RejectionReasonForbidden:    "forbidden",
		srtgo.RejectionReasonNotFound:     "not found",
		srtgo.RejectionReasonBadMode:      "bad mode",
		srtgo.RejectionReasonUnacceptable: "unacceptable",
		RejectionReasonConflict:           "conflict (path busy)",
		RejectionReasonInternal:           "internal server error",
	}
	if n, ok := names[r]; ok {
		return fmt.Sprintf("%s (%d)", n, r)
	}
	return fmt.Sprintf("reject reason %d", r)
}

var (
	secretShort = regexp.MustCompile(`^((?:publish|read):[^:]*:[^:]*:).*$`)
	secretKeyed = regexp.MustCompile(`([,:]s=)[^,]*`)
)

// redactStreamID hides the password of either streamid form, since
// rejected streamids are logged.
func redactStreamID(s string) string {
	s = secretShort.ReplaceAllString(s, "${1}***")
	return secretKeyed.ReplaceAllString(s, "${1}***")
}
