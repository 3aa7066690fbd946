package plane

import (
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no UDP address", Config{}, "UDP listen address is empty"},
		{"bad public IP", Config{UDPListen: "127.0.0.1:0", PublicIPs: []string{"1.2.3"}}, `public IP "1.2.3" is not an IP address`},
	} {
		if err := c.cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := (Config{UDPListen: "127.0.0.1:0", PublicIPs: []string{"203.0.113.7"}}).Check(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}
