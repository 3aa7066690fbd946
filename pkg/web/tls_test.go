package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files
// and returns their paths and the certificate for the client's pool.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestHTTPSFromFiles(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t, t.TempDir(), "srtwhep test")
	s := start(t, Config{TLS: TLS{CertFile: certFile, KeyFile: keyFile}})
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: closeBound}
	resp, err := client.Get("https://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" || resp.TLS == nil || resp.Proto != "HTTP/1.1" {
		t.Fatalf("https: %d %q %s tls=%v", resp.StatusCode, body, resp.Proto, resp.TLS != nil)
	}
	// The connection caps apply below TLS too: the slot is the TCP
	// connection's.
	if n := s.limit.openConns(); n != 1 {
		t.Errorf("%d connections counted, want the one kept alive", n)
	}
	// Plain HTTP on the HTTPS port gets no page.
	c := dialFrom(t, s, "")
	c.SetDeadline(time.Now().Add(closeBound))
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	got, _ := io.ReadAll(c)
	if strings.Contains(string(got), "ok\n") {
		t.Errorf("plain HTTP answered on the HTTPS port: %q", got)
	}
}

// certbot replaces the files in place; the next handshake after the check
// interval uses the new certificate without a restart.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, first := selfSigned(t, dir, "first")
	cf := &certFiles{cert: certFile, key: keyFile, log: slog.New(slog.DiscardHandler), now: time.Now}
	if err := cf.load(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cf.now = func() time.Time { return now }
	_, _, second := selfSigned(t, dir, "second")
	later := time.Now().Add(time.Minute)
	for _, f := range []string{certFile, keyFile} {
		os.Chtimes(f, later, later)
	}
	got, _ := cf.get(nil)
	if leaf, _ := x509.ParseCertificate(got.Certificate[0]); !leaf.Equal(first) {
		t.Error("reloaded before the check interval")
	}
	now = now.Add(certReloadEvery)
	got, _ = cf.get(nil)
	if leaf, _ := x509.ParseCertificate(got.Certificate[0]); !leaf.Equal(second) {
		t.Error("not reloaded after the files changed")
	}
	// A half-written renewal keeps the working certificate.
	os.WriteFile(keyFile, []byte("not a key"), 0o600)
	os.Chtimes(keyFile, later.Add(time.Minute), later.Add(time.Minute))
	now = now.Add(certReloadEvery)
	if got, _ = cf.get(nil); got == nil {
		t.Fatal("no certificate after a failed reload")
	}
	if leaf, _ := x509.ParseCertificate(got.Certificate[0]); !leaf.Equal(second) {
		t.Error("a broken renewal replaced the working certificate")
	}
}

// ACME cannot be exercised without the internet. What can be checked here:
// the settings are refused or accepted at start-up, the listener offers the
// TLS-ALPN-01 protocol, and a handshake for a name other than the domain is
// refused without ordering anything.
func TestACMEConfig(t *testing.T) {
	if _, err := Listen(Config{Listen: "127.0.0.1:0", TLS: TLS{Domain: "stream.example.org"}}); err == nil || !strings.Contains(err.Error(), "cacheDir") {
		t.Errorf("no cacheDir: %v", err)
	}
	if _, err := Listen(Config{Listen: "127.0.0.1:0", TLS: TLS{Domain: "stream.example.org", CertFile: "a", KeyFile: "b", CacheDir: t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("files and domain: %v", err)
	}
	ro := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(ro, 0o500)
	if os.Geteuid() != 0 { // root writes anywhere
		if _, err := Listen(Config{Listen: "127.0.0.1:0", TLS: TLS{Domain: "stream.example.org", CacheDir: ro}}); err == nil || !strings.Contains(err.Error(), "writable") {
			t.Errorf("read-only cacheDir: %v", err)
		}
	}
	s := start(t, Config{TLS: TLS{Domain: "stream.example.org", CacheDir: filepath.Join(t.TempDir(), "acme")}})
	if !slices.Contains(s.srv.TLSConfig.NextProtos, "acme-tls/1") {
		t.Errorf("NextProtos %v lacks acme-tls/1 (TLS-ALPN-01)", s.srv.TLSConfig.NextProtos)
	}
	d := &net.Dialer{Timeout: closeBound}
	_, err := tls.DialWithDialer(d, "tcp", s.Addr().String(), &tls.Config{ServerName: "other.example.org", InsecureSkipVerify: true})
	if err == nil {
		t.Fatal("a handshake for a foreign name succeeded")
	}
}

func TestMissingCertFile(t *testing.T) {
	_, err := Listen(Config{Listen: "127.0.0.1:0", TLS: TLS{CertFile: "/nonexistent.pem", KeyFile: "/nonexistent.key"}})
	if err == nil || !strings.Contains(err.Error(), "certFile") {
		t.Fatalf("err = %v", err)
	}
}
