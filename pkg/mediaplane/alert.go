package mediaplane

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/ciphersuite"
	"github.com/pion/dtls/v3/pkg/crypto/prf"
	"github.com/pion/dtls/v3/pkg/protocol/recordlayer"
)

// After the handshake the viewer's DTLS session is detached from pion
// (doc.go), yet the viewer may still close it with an alert. An alert
// record's first byte is plain, its body encrypted: ending a viewer on
// the first byte alone let anyone who can send from its address (a
// spoofed source, a NAT neighbour) end it with one datagram of 21. So
// the alert is opened with the session's own keys, and only one that
// authenticates ends the viewer.

// cipherSuites are the suites the server accepts: the AEAD ones every
// WebRTC stack offers, whose records alertOpener can open.
var cipherSuites = []dtls.CipherSuiteID{
	dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	dtls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	dtls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	dtls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	dtls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	dtls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
}

// alertOpener opens the viewer's records of the epoch after the
// handshake.
type alertOpener struct {
	epoch uint16
	open  interface {
		Decrypt(recordlayer.Header, []byte) ([]byte, error)
	}
}

// sessionSecrets are the fields of pion's exported session state that
// the record keys derive from (RFC 5246 §6.3).
type sessionSecrets struct {
	LocalRandom, RemoteRandom [32]byte
	CipherSuiteID             uint16
	MasterSecret              []byte
	RemoteEpoch               uint16
}

// newAlertOpener derives the client's record keys of a finished server
// handshake.
func newAlertOpener(conn *dtls.Conn) (*alertOpener, error) {
	state, ok := conn.ConnectionState()
	if !ok {
		return nil, errors.New("DTLS connection state unavailable")
	}
	raw, err := state.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var s sessionSecrets
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&s); err != nil {
		return nil, fmt.Errorf("DTLS session state: %w", err)
	}
	keyLen, ivLen, h := 16, 4, prf.HashFunc(sha256.New)
	chacha := false
	switch dtls.CipherSuiteID(s.CipherSuiteID) {
	case dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, dtls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:
	case dtls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, dtls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:
		keyLen, h = 32, sha512.New384
	case dtls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, dtls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:
		keyLen, ivLen, chacha = 32, 12, true
	default:
		return nil, fmt.Errorf("cipher suite %s: alerts cannot be authenticated", dtls.CipherSuiteName(dtls.CipherSuiteID(s.CipherSuiteID)))
	}
	// The server's random is the local one.
	k, err := prf.GenerateEncryptionKeys(s.MasterSecret, s.RemoteRandom[:], s.LocalRandom[:], 0, keyLen, ivLen, h)
	if err != nil {
		return nil, err
	}
	o := &alertOpener{epoch: s.RemoteEpoch}
	if chacha {
		o.open, err = ciphersuite.NewChaCha20Poly1305(k.ServerWriteKey, k.ServerWriteIV, k.ClientWriteKey, k.ClientWriteIV)
	} else {
		o.open, err = ciphersuite.NewGCM(k.ServerWriteKey, k.ServerWriteIV, k.ClientWriteKey, k.ClientWriteIV)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// authentic reports whether the datagram b holds an alert record of the
// session's epoch that decrypts with the viewer's keys: a close_notify or
// a fatal alert, either of which ends the session (RFC 5246 §7.2). A
// plaintext or forged record is not.
func (o *alertOpener) authentic(b []byte) bool {
	if o == nil {
		return false
	}
	for len(b) >= recordlayer.FixedHeaderSize {
		var h recordlayer.Header
		if err := h.Unmarshal(b); err != nil {
			return false
		}
		// The header's length field (pion's Unmarshal leaves ContentLen
		// to the record's own parser).
		n := recordlayer.FixedHeaderSize + int(binary.BigEndian.Uint16(b[11:13]))
		if n > len(b) {
			return false
		}
		if b[0] == contentAlert && h.Epoch == o.epoch {
			// Decrypt opens in place: work on a copy.
			if plain, err := o.open.Decrypt(h, bytes.Clone(b[:n])); err == nil &&
				len(plain) >= recordlayer.FixedHeaderSize+2 {
				return true
			}
		}
		b = b[n:]
	}
	return false
}
