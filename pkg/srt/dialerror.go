package srt

// How a dial fails, said so that its reader can act: libsrt's error and
// the reject reason the listener sent.

/*
#cgo LDFLAGS: -lsrt
#include <srt/srt.h>
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/haivision/srtgo"
)

// Reject reasons libsrt reports on the caller's side (srt.h SRT_REJ_*):
// they come from the handshake itself, not from the listener's callback.
const (
	rejPeer      = 2  // SRT_REJ_PEER: refused without a reason
	rejBadSecret = 10 // SRT_REJ_BADSECRET
	rejUnsecure  = 11 // SRT_REJ_UNSECURE
	rejTimeout   = 16 // SRT_REJ_TIMEOUT
)

// DialError is a connect that failed: libsrt's error and, when the
// listener refused, the reject reason it sent.
type DialError struct {
	Addr string
	// Reason is the SRT reject reason: below 1000 libsrt's own
	// (SRT_REJ_*), from 1000 the listener's access-control answer (1404
	// not found, 1401 unauthorized, …); 0 when the handshake never ran.
	Reason int
	Err    error // libsrt's error (a srtgo.SRTErrno), or the resolver's
}

func (e *DialError) Error() string {
	return fmt.Sprintf("srt connect to %s: %s", e.Addr, e.Describe())
}

func (e *DialError) Unwrap() error { return e.Err }

// Timeout reports a listener that never answered the handshake.
func (e *DialError) Timeout() bool {
	return errors.Is(e.Err, srtgo.ENoServer) || e.Reason == rejTimeout
}

// Rejected reports a listener that answered and refused.
func (e *DialError) Rejected() bool {
	return errors.Is(e.Err, srtgo.EConnRej) && !e.Timeout()
}

// Describe says what went wrong in a few words and how to fix it, with
// the reject reason's number: "no such stream (1404)".
func (e *DialError) Describe() string {
	if !e.Rejected() {
		if e.Timeout() {
			return "no answer (connection timed out)"
		}
		return e.Err.Error()
	}
	switch e.Reason {
	case srtgo.RejectionReasonNotFound:
		return "no such stream (1404)"
	case srtgo.RejectionReasonUnauthorized:
		return "unauthorized (1401); the listener wants credentials in the streamid"
	case srtgo.RejectionReasonForbidden:
		return "forbidden (1403); the listener does not let this address or user read the path"
	case srtgo.RejectionReasonBadMode:
		return "bad mode (1405); the listener does not serve this streamid's mode"
	case rejBadSecret:
		return fmt.Sprintf("wrong passphrase (%d); use the listener's passphrase", e.Reason)
	case rejUnsecure:
		return fmt.Sprintf("encryption mismatch (%d); the listener wants a passphrase, or wants none", e.Reason)
	case rejPeer:
		return fmt.Sprintf("refused without a reason (%d)", e.Reason)
	}
	if e.Reason >= srtgo.RejectionReasonPredefined {
		return reasonName(e.Reason)
	}
	return fmt.Sprintf("%s (%d)", C.GoString(C.srt_rejectreason_str(C.int(e.Reason))), e.Reason)
}
