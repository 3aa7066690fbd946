package turncred

import (
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/pion/turn/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startTURN runs a real pion TURN server on loopback that checks
// credentials with the TURN REST scheme (pion's own implementation of
// draft-uberti-behave-turn-rest, as coturn's use-auth-secret), and returns
// its address.
func startTURN(t *testing.T, secret string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm:       "srtwhep.test",
		AuthHandler: turn.LongTermTURNRESTAuthHandler(secret, nil),
		PacketConnConfigs: []turn.PacketConnConfig{{
			PacketConn:            pc,
			RelayAddressGenerator: &turn.RelayAddressGeneratorStatic{RelayAddress: net.ParseIP("127.0.0.1"), Address: "127.0.0.1"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return pc.LocalAddr().String()
}

// allocate asks the TURN server at addr for a relay with user and pass.
func allocate(t *testing.T, addr, user, pass string) error {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: addr, TURNServerAddr: addr, Conn: conn,
		Username: user, Password: pass, Realm: "srtwhep.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	relay, err := c.Allocate()
	if err != nil {
		return err
	}
	return relay.Close()
}

var mintedRE = regexp.MustCompile(`^<turn:([^>]+)>; rel="ice-server"; username="([^"]+)"; credential="([^"]+)"; credential-type="password"$`)

// TestMintAllocates: the credential Links mints allocates a relay on a
// real TURN server sharing the secret, and the same username with a
// forged password, or a credential minted from another secret, does not.
func TestMintAllocates(t *testing.T) {
	const secret = "north-wind-shared-secret"
	addr := startTURN(t, secret)
	links := Links([]Server{{URLs: []string{"turn:" + addr + "?transport=udp"}, AuthSecret: secret, CredentialTTL: time.Hour}}, true)
	var user, pass string
	for _, l := range links {
		if m := mintedRE.FindStringSubmatch(l); m != nil {
			user, pass = m[2], m[3]
		}
	}
	if user == "" {
		t.Fatalf("no TURN Link with credentials in %q", links)
	}
	if err := allocate(t, addr, user, pass); err != nil {
		t.Fatalf("the minted credential %q did not allocate: %v", user, err)
	}
	if err := allocate(t, addr, user, "AAAA"+pass[4:]); err == nil {
		t.Errorf("a forged password allocated: the TURN server checks nothing, so the test proves nothing")
	}
	u2, p2 := Mint("another-secret", time.Now().Add(time.Hour), "0123456789abcdef")
	if err := allocate(t, addr, u2, p2); err == nil {
		t.Errorf("a credential from another secret allocated")
	}
}
