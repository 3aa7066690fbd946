package auth

import (
	"net/http"
	"net/netip"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestIPAllowed(t *testing.T) {
	list := []string{"10.0.0.0/8", "203.0.113.7", "2001:db8::/32"}
	for _, tc := range []struct {
		remote string
		want   bool
	}{
		{"10.1.2.3:5000", true},
		{"[::ffff:10.9.9.9]:5000", true}, // mapped IPv4 matches the IPv4 network
		{"11.0.0.1:5000", false},
		{"203.0.113.7:1", true},
		{"203.0.113.8:1", false},
		{"[2001:db8:1::5]:9", true},
		{"[2001:db9::5]:9", false},
		{"203.0.113.7", true}, // a bare address works too
		{"not-an-address:80", false},
	} {
		if got := IPAllowed(list, AddrOf(tc.remote)); got != tc.want {
			t.Errorf("IPAllowed(%s) = %v, want %v", tc.remote, got, tc.want)
		}
	}
	if !IPAllowed(nil, netip.Addr{}) {
		t.Error("an empty list must allow everyone")
	}
	if IPAllowed([]string{"garbage"}, netip.MustParseAddr("10.0.0.1")) {
		t.Error("an unparsable entry must match nothing")
	}
}

func TestSecretComparison(t *testing.T) {
	if !Equal("s3cret", "s3cret") || Equal("s3cret", "s3cre") || Equal("s3cret", "s3cret!") || Equal("", "x") {
		t.Error("Equal is wrong")
	}
	if !Equal("", "") {
		t.Error(`Equal("", "") must hold`)
	}
	if !CredentialsMatch("cam", "pw", "cam", "pw") || CredentialsMatch("cam", "bad", "cam", "pw") || CredentialsMatch("bad", "pw", "cam", "pw") {
		t.Error("CredentialsMatch is wrong")
	}
	tokens := []string{"alpha", "beta"}
	if !TokenValid(tokens, "beta") || TokenValid(tokens, "gamma") || TokenValid(tokens, "") || TokenValid([]string{""}, "") {
		t.Error("TokenValid is wrong")
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer abc":  "abc",
		"bearer  abc": "abc",
		"Basic abc":   "",
		"Bearer":      "",
		"":            "",
	} {
		h := http.Header{}
		if in != "" {
			h.Set("Authorization", in)
		}
		if got := BearerToken(h); got != want {
			t.Errorf("BearerToken(%q) = %q, want %q", in, got, want)
		}
	}
}
