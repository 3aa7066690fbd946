package deploycheck

import (
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

const stunCookie = 0x2112a442

// stunServer answers binding requests on loopback the way a public STUN
// server would for a client seen at mapped. corrupt flips a byte of the
// transaction ID; silent reads and never answers.
func stunServer(t *testing.T, mapped net.IP, corrupt, silent bool) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil || silent || n < 20 || binary.BigEndian.Uint16(buf) != 0x0001 || binary.BigEndian.Uint32(buf[4:]) != stunCookie {
				continue
			}
			txid := append([]byte(nil), buf[8:20]...)
			if corrupt {
				txid[0] ^= 0xff
			}
			// SOFTWARE (odd length, padded) first, so the client must walk
			// the attributes, then XOR-MAPPED-ADDRESS.
			soft := []byte{0x80, 0x22, 0, 5, 's', 't', 'u', 'n', '!', 0, 0, 0}
			xma := make([]byte, 12)
			binary.BigEndian.PutUint16(xma, 0x0020)
			binary.BigEndian.PutUint16(xma[2:], 8)
			xma[5] = 0x01
			binary.BigEndian.PutUint16(xma[6:], 40000^(stunCookie>>16))
			binary.BigEndian.PutUint32(xma[8:], binary.BigEndian.Uint32(mapped.To4())^stunCookie)
			resp := binary.BigEndian.AppendUint16(nil, 0x0101)
			resp = binary.BigEndian.AppendUint16(resp, uint16(len(soft)+len(xma)))
			resp = binary.BigEndian.AppendUint32(resp, stunCookie)
			resp = append(append(append(resp, txid...), soft...), xma...)
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

func TestDeployPublicIPFromSTUN(t *testing.T) {
	mapped := net.ParseIP("198.51.100.77")
	route := routeSource(t)
	cases := []struct {
		name            string
		corrupt, silent bool
		want, log       string // log "": no STUN address may be taken
	}{
		{"answers", false, false, mapped.String(), "(STUN 127.0.0.1:"},
		{"wrong transaction", true, false, route, ""},
		{"silent", false, true, route, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := stunServer(t, mapped, tc.corrupt, tc.silent)
			envFile := filepath.Join(t.TempDir(), ".env")
			r := runDeploy(t, envFile, []string{"DEPLOY_STUN_SERVER=" + srv}).ok(t)
			if got := r.env(t); got != "PUBLIC_IP="+tc.want+"\n" {
				t.Errorf("env file = %q; want PUBLIC_IP=%s\nstderr:\n%s", got, tc.want, r.stderr)
			}
			if tc.log != "" && !strings.Contains(r.stderr, tc.log) {
				t.Errorf("stderr does not mention %q:\n%s", tc.log, r.stderr)
			}
			if tc.log == "" && strings.Contains(r.stderr, "(STUN") {
				t.Errorf("took an address from a STUN answer it should have refused:\n%s", r.stderr)
			}
		})
	}
}
