package web

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Probe GETs rawURL and reports an error unless the answer is 2xx: the
// container health check without curl. An https URL to a loopback address
// is not verified, because the certificate names the public domain (or is
// being obtained) while the check runs inside the host or container.
func Probe(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: nil}
	if ip := net.ParseIP(u.Hostname()); u.Scheme == "https" && ip != nil && ip.IsLoopback() {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	resp, err := (&http.Client{Timeout: 3 * time.Second, Transport: tr}).Get(rawURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", rawURL, resp.Status)
	}
	return nil
}
