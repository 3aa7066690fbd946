package web

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// TLS turns on HTTPS on the listener: either a certificate from files, or
// one obtained automatically for Domain through ACME (Let's Encrypt). The
// zero value serves plain HTTP. Its fields mirror the config's http.tls
// one for one, so the composition root converts with web.TLS(cfg.HTTP.TLS)
// and a field added on one side only fails to compile there.
type TLS struct {
	CertFile, KeyFile string
	// Domain is the DNS name to get a certificate for. The ACME server
	// checks it with the TLS-ALPN-01 challenge on port 443 of that name,
	// which must therefore reach this listener (http.listen ":443", or 443
	// forwarded to it); no port 80 listener is needed.
	Domain string
	// CacheDir keeps the account key and certificates across restarts, so
	// a restart does not order a new certificate (ACME servers limit how
	// many a name may get per week).
	CacheDir string
	// Email is given to the ACME server for expiry notices; optional.
	Email string
}

func (t TLS) enabled() bool { return t.CertFile != "" || t.Domain != "" }

// certReloadEvery is how often the certificate files are checked for a
// change, so that a renewal by certbot or similar is picked up without a
// restart and without a stat per handshake.
const certReloadEvery = 30 * time.Second

// tlsConfig builds the listener's TLS settings. Only HTTP/1.1 is offered:
// the connection caps and per-request deadlines are designed around one
// request at a time per connection, and WHEP needs nothing more.
func (t TLS) tlsConfig(log *slog.Logger) (*tls.Config, error) {
	switch {
	case t.CertFile != "" && t.Domain != "":
		return nil, errors.New("http.tls: set either certFile/keyFile or domain, not both")
	case t.CertFile != "":
		cf := &certFiles{cert: t.CertFile, key: t.KeyFile, log: log, now: time.Now}
		if err := cf.load(); err != nil {
			return nil, err
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, GetCertificate: cf.get}, nil
	}
	if t.CacheDir == "" {
		return nil, errors.New("http.tls.cacheDir is empty; set a writable directory so certificates survive restarts, e.g. /var/lib/srtwhep/acme")
	}
	// Fail at start-up, not at the first handshake hours later.
	if err := os.MkdirAll(t.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("http.tls.cacheDir: %w; make it writable by the server's user", err)
	}
	probe, err := os.CreateTemp(t.CacheDir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("http.tls.cacheDir: %w; make it writable by the server's user", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	m := &autocert.Manager{
		Prompt: autocert.AcceptTOS,
		// Only our own name: a handshake for any other SNI must not
		// make us order certificates.
		HostPolicy: autocert.HostWhitelist(t.Domain),
		Cache:      autocert.DirCache(filepath.Clean(t.CacheDir)),
		Email:      t.Email,
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1", acme.ALPNProto},
		GetCertificate: m.GetCertificate}, nil
}

// certFiles serves a certificate from files and reloads it when they
// change. A reload that fails keeps the previous certificate: a renewal
// caught halfway (new certificate, old key) must not break HTTPS.
type certFiles struct {
	cert, key string
	log       *slog.Logger
	now       func() time.Time

	mu      sync.Mutex
	cur     *tls.Certificate
	modTime time.Time
	checked time.Time
}

func (c *certFiles) load() error {
	crt, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return fmt.Errorf("http.tls: %w; check certFile and keyFile (PEM, matching pair, readable by the server)", err)
	}
	c.cur, c.modTime = &crt, c.newest()
	c.checked = c.now()
	return nil
}

func (c *certFiles) newest() time.Time {
	var t time.Time
	for _, f := range []string{c.cert, c.key} {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= certReloadEvery {
		c.checked = now
		if m := c.newest(); !m.Equal(c.modTime) {
			if err := c.load(); err != nil {
				c.log.Error("TLS certificate changed but cannot be loaded; still serving the previous one", "err", err)
			} else {
				c.log.Info("TLS certificate reloaded", "certFile", c.cert)
			}
		}
	}
	return c.cur, nil
}
