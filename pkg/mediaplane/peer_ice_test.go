package mediaplane

import (
	"net"
	"net/netip"
	"time"

	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// request builds a binding request as a controlling full agent sends it.
func (p *rawPeer) request(srvUfrag, srvPwd string, nominate bool) *stun.Message {
	p.t.Helper()
	return testkit.ICECheck{ServerUfrag: srvUfrag, ClientUfrag: p.ufrag, Password: srvPwd, Controlling: true, Nominate: nominate}.Build(p.t)
}

// check sends a valid check and returns the mapped address of the
// response, which must carry our server's integrity and fingerprint.
func (p *rawPeer) check(nominate bool) netip.AddrPort {
	p.t.Helper()
	return p.checkWith(p.conn, p.srvUfrag, p.srvPwd, nominate)
}

func (p *rawPeer) checkWith(conn *net.UDPConn, srvUfrag, srvPwd string, nominate bool) netip.AddrPort {
	p.t.Helper()
	ap, _ := p.checkUnless(conn, srvUfrag, srvPwd, nominate, nil)
	return ap
}

// checkUnlessEnded is check for a viewer that may end at any moment (its
// consent expiring): a check the server leaves unanswered because the
// viewer ended meanwhile is not a failure. ok is false then.
func (p *rawPeer) checkUnlessEnded(ended <-chan struct{}) (ok bool) {
	p.t.Helper()
	_, ok = p.checkUnless(p.conn, p.srvUfrag, p.srvPwd, false, ended)
	return ok
}

func (p *rawPeer) checkUnless(conn *net.UDPConn, srvUfrag, srvPwd string, nominate bool, ended <-chan struct{}) (netip.AddrPort, bool) {
	p.t.Helper()
	req := p.request(srvUfrag, srvPwd, nominate)
	if _, err := conn.WriteToUDPAddrPort(req.Raw, p.srv); err != nil {
		p.t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-p.stunIn:
			if m.TransactionID != req.TransactionID {
				continue
			}
			if m.Type != stun.BindingSuccess {
				p.t.Fatalf("response type %v", m.Type)
			}
			if err := stun.NewShortTermIntegrity(srvPwd).Check(m); err != nil {
				p.t.Fatalf("response integrity: %v", err)
			}
			if err := stun.Fingerprint.Check(m); err != nil {
				p.t.Fatalf("response fingerprint: %v", err)
			}
			var xa stun.XORMappedAddress
			if err := xa.GetFrom(m); err != nil {
				p.t.Fatal(err)
			}
			ip, _ := netip.AddrFromSlice(xa.IP)
			return netip.AddrPortFrom(ip.Unmap(), uint16(xa.Port)), true
		case <-ended:
			return netip.AddrPort{}, false
		case <-timeout:
			p.t.Fatal("no answer to a valid STUN check within 5 s")
		}
	}
}
