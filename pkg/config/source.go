package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Source is a path's parsed source URL (pathDefaults.source, or a path's
// own): where an edge pulls the path from.
type Source struct {
	Addr       string // HOST:PORT of the source's SRT listener
	User, Pass string // credentials from USER:PASS@, sent in the streamid
	Passphrase string // ?passphrase=, "" for none
	// Latency is ?latency=; 0 takes srt.latency.
	Latency time.Duration
	// Redacted is the URL without credentials or passphrase, for logs,
	// events and metrics.
	Redacted string
}

// sourceExample ends every source error, so the fix is in the same line.
const sourceExample = "write srt://HOST:PORT, e.g. srt://origin.example.com:8890, optionally with ?passphrase=…&latency=200ms"

// ParseSource parses srt://[USER[:PASS]@]HOST:PORT[?passphrase=…&latency=…];
// "" is no source. Errors say what is wrong and how to write it instead.
func ParseSource(raw string) (Source, error) {
	if raw == "" {
		return Source{}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Source{}, fmt.Errorf("%q is not a URL; %s", redactURL(raw), sourceExample)
	}
	switch {
	case u.Scheme != "srt":
		return Source{}, fmt.Errorf("scheme %q is not srt; %s", u.Scheme, sourceExample)
	case u.Opaque != "" || u.Host == "":
		return Source{}, fmt.Errorf("%q has no host; %s", redactURL(raw), sourceExample)
	case u.Path != "" && u.Path != "/":
		return Source{}, fmt.Errorf("%q has a path (%s); the edge reads its own path name from the source (read:PATH), so %s",
			redactURL(raw), u.Path, sourceExample)
	case u.Fragment != "":
		return Source{}, fmt.Errorf("%q has a #fragment; %s", redactURL(raw), sourceExample)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return Source{}, fmt.Errorf("%q has no host; %s", redactURL(raw), sourceExample)
	}
	if port == "" {
		return Source{}, fmt.Errorf("%q has no port (SRT has no default port); write e.g. srt://%s:8890",
			redactURL(raw), u.Host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Source{}, fmt.Errorf("port %q is not a number from 1 to 65535; %s", port, sourceExample)
	}
	src := Source{Addr: net.JoinHostPort(host, port), Redacted: "srt://" + u.Host}
	if u.User != nil {
		src.User = u.User.Username()
		src.Pass, _ = u.User.Password()
		if src.User == "" {
			return Source{}, errors.New("the URL has credentials with an empty user name; write srt://USER:PASS@HOST:PORT or leave them out")
		}
		for _, s := range []string{src.User, src.Pass} {
			if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(",:=#", r) }) {
				return Source{}, errors.New("the URL's user or password contains a space, control character or one of , : = #, which separate fields of the SRT streamid; remove it")
			}
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Source{}, fmt.Errorf("the query %q is malformed (%v); %s", u.RawQuery, err, sourceExample)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return Source{}, fmt.Errorf("option %q is given %d times; give it once", k, len(vs))
		}
		val := vs[0]
		switch k {
		case "passphrase":
			if n := len(val); n < 10 || n > 79 {
				return Source{}, fmt.Errorf("passphrase is %d characters long; SRT needs 10 to 79, the same as the source's", n)
			}
			src.Passphrase = val
		case "latency":
			d, err := time.ParseDuration(val)
			switch {
			case err != nil:
				return Source{}, fmt.Errorf("latency %q is not a duration; write it with its unit, e.g. latency=200ms (ffmpeg's srt URLs count microseconds, srt-live-transmit's milliseconds, so a bare number is ambiguous)", val)
			case d < 0:
				return Source{}, fmt.Errorf("latency %s is negative; write e.g. latency=200ms", d)
			case d%time.Millisecond != 0:
				return Source{}, fmt.Errorf("latency %s is not a whole number of milliseconds, which is what libsrt takes; round it, e.g. latency=200ms", d)
			}
			src.Latency = d
		default:
			return Source{}, fmt.Errorf("unknown option %q; the source URL takes passphrase= and latency=", k)
		}
	}
	return src, nil
}

// redactURL hides credentials and the query (which may hold the
// passphrase) of a source URL quoted in an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "@?"); i >= 0 {
			return raw[:i] + "…"
		}
		return raw
	}
	if u.Opaque != "" {
		return u.Scheme + ":" + u.Opaque
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += "***@"
	}
	out += u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?…"
	}
	return out
}

// pathSource checks a path's source keys; like path, it skips values
// equal to pathDefaults (def), which were checked there.
func (v *validator) pathSource(key string, p Path, def *Path) {
	if def == nil || p.Source != def.Source {
		if src, err := ParseSource(p.Source); err != nil {
			v.fail(key+".source", "%s", err)
		} else if src.Addr != "" {
			v.sourceLoop(key+".source", src)
		}
	}
	if def == nil || p.SourceTimeout != def.SourceTimeout {
		v.positive(key+".sourceTimeout", p.SourceTimeout, "5s")
	}
	if def == nil || p.SourceLinger != def.SourceLinger {
		if p.SourceLinger < 0 {
			v.fail(key+".sourceLinger", "%s is negative; use 0 to close a pull with its last viewer, or a duration such as 10s", p.SourceLinger)
		}
	}
}

// sourceLoop refuses a source that is this server's own SRT listener:
// every pull would read from itself and never get a picture. Only what can
// be told without DNS is checked: an IP address (or localhost) of this
// host on srt.listen's port.
func (v *validator) sourceLoop(key string, src Source) {
	host, port, _ := net.SplitHostPort(src.Addr)
	lhost, lport, err := net.SplitHostPort(v.c.SRT.Listen)
	if err != nil || port != lport || lport == "0" {
		return
	}
	var ips []netip.Addr
	if strings.EqualFold(host, "localhost") {
		ips = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	} else if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip.Unmap()}
	}
	listenIP, err := netip.ParseAddr(lhost)
	listenAll := lhost == "" || (err == nil && listenIP.IsUnspecified())
	for _, ip := range ips {
		loop := false
		switch {
		case err == nil && !listenAll:
			loop = ip == listenIP.Unmap()
		default:
			loop = ip.IsLoopback() || ip.IsUnspecified() || localAddr(ip)
		}
		if loop {
			v.fail(key, "%s is this server's own SRT listener (srt.listen %q), so the path would pull from itself; write the origin's address, or remove source on the origin",
				src.Redacted, v.c.SRT.Listen)
			return
		}
	}
}

// localAddr reports whether ip belongs to one of this host's interfaces.
func localAddr(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if la, ok := netip.AddrFromSlice(n.IP); ok && la.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// publicURL checks http.publicURL: an absolute http(s) URL with a host,
// optionally a path prefix that a proxy in front strips.
func (v *validator) publicURL(s string) {
	v.absURL("http.publicURL", s, "write the address viewers reach this server at, e.g. https://edge1.example.com")
}

// absURL checks an optional absolute http(s) URL that goes to viewers.
func (v *validator) absURL(key, s, example string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		v.fail(key, "%q is not a URL; %s", s, example)
	case u.Scheme != "http" && u.Scheme != "https":
		v.fail(key, "scheme %q is not http or https; %s", u.Scheme, example)
	case u.Host == "" || u.Hostname() == "":
		v.fail(key, "%q has no host; %s", s, example)
	case u.User != nil:
		v.fail(key, "%q has credentials, which would be sent to every viewer; remove them", s)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		v.fail(key, "%q has a query or fragment, which session URLs cannot follow; %s", s, example)
	}
}
