package turncred

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the TURN REST scheme's MAC
	"encoding/base64"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestMintVector pins the scheme to a value computed outside Go:
//
//	printf %s 1700003600:0123456789abcdef | openssl dgst -sha1 -hmac north-wind-shared-secret -binary | base64
func TestMintVector(t *testing.T) {
	user, pass := Mint("north-wind-shared-secret", time.Unix(1700003600, 0), "0123456789abcdef")
	if user != "1700003600:0123456789abcdef" {
		t.Errorf("username %q", user)
	}
	if want := "r/Ddp0zIWJ4p3PX8vrDOZUGl5ak="; pass != want {
		t.Errorf("credential %q, want %q (openssl)", pass, want)
	}
}

var mintedLinkRE = regexp.MustCompile(`^<turn:turn\.example\.net\?transport=udp>; rel="ice-server"; username="(\d+):([0-9a-f]{16})"; credential="([^"]+)"; credential-type="password"$`)

// TestLinks: STUN servers always, credentialed servers only on request,
// a minted credential per call valid for the TTL, static credentials
// quoted as RFC 8288 quoted-strings.
func TestLinks(t *testing.T) {
	const secret = "north-wind-shared-secret"
	list := []Server{
		{URLs: []string{"stun:stun.example.net:3478"}},
		{URLs: []string{"turn:turn.example.net?transport=udp"}, AuthSecret: secret, CredentialTTL: time.Hour},
		{URLs: []string{"turns:static.example.net"}, Username: `u"1`, Credential: `p\é`},
	}
	if !AnyCredentials(list) || AnyCredentials(list[:1]) {
		t.Error("AnyCredentials is wrong")
	}
	if got := Links(list, false); len(got) != 1 || got[0] != `<stun:stun.example.net:3478>; rel="ice-server"` {
		t.Errorf("without credentials: %q", got)
	}
	users := map[string]bool{}
	for range 2 {
		before := time.Now()
		got := Links(list, true)
		after := time.Now()
		if len(got) != 3 {
			t.Fatalf("with credentials: %q", got)
		}
		m := mintedLinkRE.FindStringSubmatch(got[1])
		if m == nil {
			t.Fatalf("minted Link %q", got[1])
		}
		exp, _ := strconv.ParseInt(m[1], 10, 64)
		if lo, hi := before.Add(time.Hour).Unix(), after.Add(time.Hour).Unix()+1; exp < lo || exp > hi {
			t.Errorf("expiry %d outside [%d, %d]: not now + CredentialTTL", exp, lo, hi)
		}
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write([]byte(m[1] + ":" + m[2]))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); m[3] != want {
			t.Errorf("credential %q, want %q", m[3], want)
		}
		users[m[1]+":"+m[2]] = true
		if want := `<turns:static.example.net>; rel="ice-server"; username="u\"1"; credential="p\\é"; credential-type="password"`; got[2] != want {
			t.Errorf("static Link %q, want %q", got[2], want)
		}
	}
	if len(users) != 2 {
		t.Errorf("two calls shared one TURN username: %v", users)
	}
}
