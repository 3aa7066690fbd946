package testkit

import (
	"net"
	"net/http"
	"testing"

	"github.com/pion/stun/v4"
)

// A check must be one a server's ICE agent accepts: USERNAME addressed to
// the server, the attributes asked for and no others, integrity under the
// password and a valid fingerprint.
func TestICECheckBuild(t *testing.T) {
	offer := "v=0\r\na=ice-ufrag:client\r\na=ice-pwd:clientpassword0123456789\r\n"
	answer := "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ice-ufrag:server\r\na=ice-pwd:serverpassword0123456789\r\n"
	for _, c := range []struct {
		name                  string
		controlling, nominate bool
	}{{"plain", false, false}, {"controlling", true, false}, {"nominating", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			ice := NewICECheck(t, offer, answer)
			ice.Controlling, ice.Nominate = c.controlling, c.nominate
			m := &stun.Message{Raw: ice.Build(t).Raw}
			if err := m.Decode(); err != nil {
				t.Fatal(err)
			}
			if m.Type != stun.BindingRequest {
				t.Errorf("type %v, want a binding request", m.Type)
			}
			var user stun.Username
			if err := user.GetFrom(m); err != nil || user.String() != "server:client" {
				t.Errorf("USERNAME %q (%v), want server:client", user, err)
			}
			if err := stun.NewShortTermIntegrity("serverpassword0123456789").Check(m); err != nil {
				t.Errorf("integrity under the server's password: %v", err)
			}
			if err := stun.Fingerprint.Check(m); err != nil {
				t.Errorf("fingerprint: %v", err)
			}
			for attr, want := range map[stun.AttrType]bool{
				stun.AttrPriority:       c.controlling,
				stun.AttrICEControlling: c.controlling,
				stun.AttrUseCandidate:   c.nominate,
			} {
				if _, err := m.Get(attr); (err == nil) != want {
					t.Errorf("%v present: %v, want %v", attr, err == nil, want)
				}
			}
		})
	}
}

// Series matches on a subset of the labels and reads counters and gauges
// alike; a missing series is reported as missing, not as 0.
func TestScrapeSeries(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE x_total counter\n" +
			"x_total{path=\"a\",reason=\"slow\"} 3\n" +
			"x_total{path=\"b\",reason=\"slow\"} 5\n" +
			"# TYPE y gauge\ny 7\n"))
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })

	fams := Scrape(t, ln.Addr().String())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
		ok     bool
	}{
		{"x_total", []string{"path", "b"}, 5, true},
		{"x_total", []string{"reason", "slow", "path", "a"}, 3, true},
		{"x_total", []string{"path", "c"}, 0, false},
		{"y", nil, 7, true},
		{"z", nil, 0, false},
	} {
		if v, ok := Series(fams, c.name, c.labels...); v != c.want || ok != c.ok {
			t.Errorf("Series(%s%q) = %v, %v; want %v, %v", c.name, c.labels, v, ok, c.want, c.ok)
		}
	}
	if v := MustMetric(t, ln.Addr().String(), "y"); v != 7 {
		t.Errorf("MustMetric(y) = %v, want 7", v)
	}
}
