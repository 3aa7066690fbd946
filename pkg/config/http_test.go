package config

import (
	"slices"
	"testing"
	"time"
)

func TestHTTPHardeningKeys(t *testing.T) {
	file := "http:\n  idleTimeout: 20s\n  bodyTimeout: 3s\n  maxConns: 100\n  maxConnsPerClient: 8\n" +
		"  trustedProxies: [127.0.0.1, \"::1\", 10.0.0.0/8]\n  tls:\n    certFile: /etc/ssl/a.pem\n    keyFile: /etc/ssl/a.key\n"
	c, err := parse("srtwhep.yml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HTTP
	if h.IdleTimeout != Duration(20*time.Second) || h.BodyTimeout != Duration(3*time.Second) || h.MaxConns != 100 ||
		h.MaxConnsPerClient != 8 || !slices.Equal(h.TrustedProxies, []string{"127.0.0.1", "::1", "10.0.0.0/8"}) ||
		h.TLS.CertFile != "/etc/ssl/a.pem" || h.TLS.KeyFile != "/etc/ssl/a.key" || !h.TLS.Enabled() {
		t.Errorf("%+v", h)
	}
	if Default().HTTP.TLS.Enabled() {
		t.Error("HTTPS must be off by default")
	}
	if got := Default().Metrics.Listen; got != "127.0.0.1:9998" {
		t.Errorf("metrics.listen defaults to %q; outside Docker it must stay on loopback", got)
	}

	c, err = parseEnv("", nil, map[string]string{
		"SRTWHEP_HTTP_TLS_DOMAIN":        "stream.example.org",
		"srtwhep_http_tls_cachedir":      "/srv/acme",
		"SRTWHEP_HTTP_TRUSTEDPROXIES":    "127.0.0.1, 10.0.0.0/8",
		"SRTWHEP_HTTP_MAXCONNSPERCLIENT": "16",
		"SRTWHEP_METRICS_LISTEN":         ":9998", // what docker-compose.yml sets
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.TLS.Domain != "stream.example.org" || c.HTTP.TLS.CacheDir != "/srv/acme" ||
		!slices.Equal(c.HTTP.TrustedProxies, []string{"127.0.0.1", "10.0.0.0/8"}) || c.HTTP.MaxConnsPerClient != 16 || c.Metrics.Listen != ":9998" {
		t.Errorf("environment: %+v %+v", c.HTTP, c.Metrics)
	}
}

func TestHTTPHardeningErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       string
	}{
		{"zero idle timeout", "http:\n  idleTimeout: 0s\n", nil,
			"srtwhep.yml:2: http.idleTimeout: 0s is not positive; use a duration such as 15s"},
		{"body timeout without unit", "http:\n  bodyTimeout: 5\n", nil,
			`srtwhep.yml:2: http.bodyTimeout: "5" has no unit; write e.g. 5s or 5ms`},
		{"no connections", "http:\n  maxConns: 0\n", nil,
			"srtwhep.yml:2: http.maxConns: 0 allows no connection at all; use 1 or more, e.g. 4096 (keep it below the open-file limit, ulimit -n)"},
		{"no connections per client", "http:\n  maxConnsPerClient: -1\n", nil,
			"srtwhep.yml:2: http.maxConnsPerClient: -1 allows no connection at all; use 1 or more, e.g. 128"},
		{"proxy hostname", "http:\n  trustedProxies:\n    - 127.0.0.1\n    - caddy\n", nil,
			`srtwhep.yml:4: http.trustedProxies[1]: "caddy" is not an IP address or network; write e.g. 203.0.113.7 or 10.0.0.0/8`},
		{"trust everyone", "http:\n  trustedProxies: [0.0.0.0/0]\n", nil,
			`srtwhep.yml:2: http.trustedProxies[0]: "0.0.0.0/0" trusts every address, so any client could claim to be any other; list only your reverse proxy's address, e.g. 127.0.0.1 or 10.0.0.0/8`},
		{"cert without key", "http:\n  tls:\n    certFile: /a.pem\n", nil,
			"srtwhep.yml:3: http.tls.certFile: is set but keyFile is empty; set both (PEM files) or neither"},
		{"files and domain", "http:\n  tls:\n    certFile: /a.pem\n    keyFile: /a.key\n    domain: stream.example.org\n", nil,
			"srtwhep.yml:5: http.tls.domain: is set together with certFile/keyFile; use either your own certificate files or an automatic certificate for domain, not both"},
		{"domain is an IP", "http:\n  tls:\n    domain: 203.0.113.7\n", nil,
			`srtwhep.yml:3: http.tls.domain: "203.0.113.7" is an IP address, which gets no certificate this way; write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"domain with port", "http:\n  tls:\n    domain: stream.example.org:8889\n", nil,
			`srtwhep.yml:3: http.tls.domain: "stream.example.org:8889" includes a port (the ACME server always checks port 443); write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"domain is a URL", "http:\n  tls:\n    domain: https://stream.example.org\n", nil,
			`srtwhep.yml:3: http.tls.domain: "https://stream.example.org" is a URL; write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"wildcard", "http:\n  tls:\n    domain: \"*.example.org\"\n", nil,
			`srtwhep.yml:3: http.tls.domain: "*.example.org" is a wildcard, which needs the DNS-01 challenge this server does not do; write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"single label", "http:\n  tls:\n    domain: localhost\n", nil,
			`srtwhep.yml:3: http.tls.domain: "localhost" is not a fully qualified name; write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"no cache", "http:\n  tls:\n    domain: stream.example.org\n    cacheDir: \"\"\n", nil,
			"srtwhep.yml:4: http.tls.cacheDir: is empty while domain is set; certificates must survive restarts (Let's Encrypt limits new ones per week), so name a writable directory, e.g. /var/lib/srtwhep/acme"},
		{"bad email", "http:\n  tls:\n    domain: stream.example.org\n    email: ops\n", nil,
			`srtwhep.yml:4: http.tls.email: "ops" is not an e-mail address; write e.g. ops@example.org, or "" for none`},
		{"env names the variable", "", map[string]string{"SRTWHEP_HTTP_TLS_DOMAIN": "1.2.3.4"},
			`SRTWHEP_HTTP_TLS_DOMAIN: http.tls.domain: "1.2.3.4" is an IP address, which gets no certificate this way; write the DNS name browsers use for this host, e.g. stream.example.org`},
		{"env section", "", map[string]string{"SRTWHEP_HTTP_TLS": "x"},
			"SRTWHEP_HTTP_TLS: http.tls: http.tls is a section, not a value; set one of its keys, e.g. SRTWHEP_HTTP_TLS_CERTFILE"},
		{"env unknown nested key", "", map[string]string{"SRTWHEP_HTTP_TLS_CERT": "x"},
			"SRTWHEP_HTTP_TLS_CERT: unknown variable; keys of http.tls are SRTWHEP_HTTP_TLS_ followed by one of CERTFILE, KEYFILE, DOMAIN, CACHEDIR, EMAIL"},
		{"env key under a value", "", map[string]string{"SRTWHEP_HTTP_LISTEN_PORT": "1"},
			"SRTWHEP_HTTP_LISTEN_PORT: unknown variable; http.listen is a single value, set it with SRTWHEP_HTTP_LISTEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEnv("srtwhep.yml", []byte(tc.yaml), tc.env)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got:  %v\nwant: %s", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"stream.example.org", "a-b.example.org.", "xn--bcher-kva.example"} {
		if _, err := parseEnv("", nil, map[string]string{"SRTWHEP_HTTP_TLS_DOMAIN": ok}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// Every new key needs a restart: they are copied into the listener.
func TestHTTPHardeningReload(t *testing.T) {
	next := Default()
	next.HTTP.TrustedProxies = []string{"127.0.0.1"}
	next.HTTP.TLS.Domain = "stream.example.org"
	next.HTTP.MaxConnsPerClient = 1
	ch := Diff(Default(), next)
	want := []string{"http.maxConnsPerClient", "http.trustedProxies", "http.tls.domain"}
	if len(ch.Live) != 0 || !slices.Equal(ch.Restart, want) {
		t.Errorf("live %v, restart %v; want restart %v", ch.Live, ch.Restart, want)
	}
}
