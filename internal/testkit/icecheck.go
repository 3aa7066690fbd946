package testkit

import (
	"strings"
	"testing"

	"github.com/pion/stun/v4"
)

// ICECheck is one ICE connectivity check (RFC 8445 §7.2.2) a viewer
// sends the server, for tests that speak ICE themselves: to hold a
// handshake slot, forge a nomination, or send a check with the wrong
// password.
type ICECheck struct {
	// ServerUfrag and ClientUfrag make USERNAME "server:client": the
	// check is addressed to the server's ufrag from the answer.
	ServerUfrag, ClientUfrag string
	// Password keys MESSAGE-INTEGRITY; the server's ice-pwd is the right
	// one.
	Password string
	// Controlling adds PRIORITY and ICE-CONTROLLING, as a full
	// controlling agent such as a browser sends them.
	Controlling bool
	// Nominate adds USE-CANDIDATE.
	Nominate bool
}

// Build returns the check with a fresh transaction ID each call,
// ending in MESSAGE-INTEGRITY and FINGERPRINT.
func (c ICECheck) Build(t testing.TB) *stun.Message {
	t.Helper()
	setters := []stun.Setter{stun.TransactionID, stun.BindingRequest, stun.NewUsername(c.ServerUfrag + ":" + c.ClientUfrag)}
	if c.Controlling {
		setters = append(setters,
			stun.RawAttribute{Type: stun.AttrPriority, Value: []byte{0x6e, 0x7f, 0x1e, 0xff}},
			stun.RawAttribute{Type: stun.AttrICEControlling, Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}})
	}
	if c.Nominate {
		setters = append(setters, stun.RawAttribute{Type: stun.AttrUseCandidate})
	}
	setters = append(setters, stun.NewShortTermIntegrity(c.Password), stun.Fingerprint)
	m, err := stun.Build(setters...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// NewICECheck is the check the viewer that made offer sends the server
// that gave answer, signed with the server's password.
func NewICECheck(t testing.TB, offer, answer string) ICECheck {
	t.Helper()
	clientUfrag, _ := ICECredentials(t, offer)
	serverUfrag, serverPwd := ICECredentials(t, answer)
	return ICECheck{ServerUfrag: serverUfrag, ClientUfrag: clientUfrag, Password: serverPwd}
}

// ICECredentials reads the first a=ice-ufrag and a=ice-pwd of sdp,
// session or media level: every section of a bundled offer or answer
// shares them.
func ICECredentials(t testing.TB, sdp string) (ufrag, pwd string) {
	t.Helper()
	for line := range strings.Lines(sdp) {
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "a=ice-ufrag:"); ok && ufrag == "" {
			ufrag = v
		}
		if v, ok := strings.CutPrefix(line, "a=ice-pwd:"); ok && pwd == "" {
			pwd = v
		}
	}
	if ufrag == "" || pwd == "" {
		t.Fatalf("no ICE credentials in\n%s", sdp)
	}
	return ufrag, pwd
}
