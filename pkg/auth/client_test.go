package auth

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestCheckAPI(t *testing.T) {
	p := NewPolicy(Rules{}, ThrottleConfig{Base: time.Millisecond, Max: time.Millisecond})
	defer p.Close()
	loop := netip.MustParseAddr("127.0.0.1")
	far := netip.MustParseAddr("203.0.113.9")
	for _, tc := range []struct {
		name  string
		c     Client
		token string
		want  Reason // 0: allowed
	}{
		{"loopback", Client{Addr: loop}, "", 0},
		{"IPv6 loopback", Client{Addr: netip.IPv6Loopback()}, "", 0},
		{"remote", Client{Addr: far}, "", ReasonForbidden},
		{"forwarded from loopback", Client{Addr: loop, Forwarded: true}, "", ReasonForbidden},
		{"forwarded, remote", Client{Addr: far, Forwarded: true}, "", ReasonForbidden},
		{"unknown address", Client{}, "", ReasonForbidden},
	} {
		if got := reasonOf(p.CheckAPI(tc.c, tc.token)); got != tc.want {
			t.Errorf("no api.token, %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	p.SetRules(Rules{APIToken: "s3cret"})
	for _, tc := range []struct {
		name  string
		c     Client
		token string
		want  Reason
	}{
		{"forwarded with the token", Client{Addr: far, Forwarded: true}, "s3cret", 0},
		{"loopback without the token", Client{Addr: loop}, "", ReasonUnauthorized},
		{"wrong token", Client{Addr: far}, "nope", ReasonUnauthorized},
	} {
		if got := reasonOf(p.CheckAPI(tc.c, tc.token)); got != tc.want {
			t.Errorf("api.token set, %s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func reasonOf(err error) Reason {
	if err == nil {
		return 0
	}
	if d := AsDenied(err); d != nil {
		return d.Reason
	}
	return -1
}

func TestClientOf(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	if c := ClientOf(r); c.Addr.String() != "127.0.0.1" || c.Forwarded {
		t.Errorf("plain request: %+v", c)
	}
	// Without the listener's verdict any forwarding header counts, so
	// that a handler mounted elsewhere still errs on the safe side.
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-IP", "X-Forwarded-Proto", "x-forwarded-host"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		r.Header.Set(h, "127.0.0.1")
		if c := ClientOf(r); !c.Forwarded {
			t.Errorf("%s: not forwarded", h)
		}
	}
	want := Client{Addr: netip.MustParseAddr("198.51.100.1"), Forwarded: true}
	r = r.WithContext(WithClient(r.Context(), want))
	if c := ClientOf(r); c != want {
		t.Errorf("the listener's verdict: %+v, want %+v", c, want)
	}
}
