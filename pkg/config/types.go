package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// lineError is what the typed values return from UnmarshalYAML: the line is
// known there, the key and the file are added by the caller that knows them.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// UnmarshalYAML accepts Go duration syntax with a unit ("200ms", "10s").
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &lineError{n.Line, "expected a duration; write a number with a unit, e.g. 10s or 200ms"}
	}
	v, err := time.ParseDuration(n.Value)
	if err == nil {
		*d = Duration(v)
		return nil
	}
	if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
		return &lineError{n.Line, fmt.Sprintf("%q has no unit; write e.g. %ss or %sms", n.Value, n.Value, n.Value)}
	}
	return &lineError{n.Line, fmt.Sprintf("%q is not a duration; write a number with a unit (ms, s, m, h), e.g. 10s or 200ms", n.Value)}
}

// MarshalYAML writes the form UnmarshalYAML reads.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML accepts a literal IPv4 or IPv6 address. Hostnames are
// refused on purpose: the address ends up in ICE candidates, and Firefox
// drops candidates that carry DNS names.
func (ip *IP) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &lineError{n.Line, "expected an IP address, e.g. 203.0.113.7"}
	}
	s := n.Value
	a, err := netip.ParseAddr(s)
	if err != nil {
		return &lineError{n.Line, ipProblem(s)}
	}
	switch {
	case a.Zone() != "":
		return &lineError{n.Line, fmt.Sprintf("%q has an interface zone, which ICE candidates cannot carry; write the address without %%%s", s, a.Zone())}
	case a.IsUnspecified():
		return &lineError{n.Line, fmt.Sprintf("%q is the unspecified address, which no browser can reach; write the public IP of this host, e.g. 203.0.113.7", s)}
	case a.IsMulticast():
		return &lineError{n.Line, fmt.Sprintf("%q is a multicast address; write the public unicast IP of this host, e.g. 203.0.113.7", s)}
	}
	*ip = IP{a.Unmap()}
	return nil
}

func ipProblem(s string) string {
	const fix = "write an IPv4 or IPv6 address, e.g. 203.0.113.7"
	if _, err := netip.ParsePrefix(s); err == nil {
		return fmt.Sprintf("%q is a network, not an address; %s", s, fix)
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return fmt.Sprintf("%q includes a port; write only the address, %s (the port is webrtc.udpPort)", s, ap.Addr())
	}
	if looksLikeHostname(s) {
		return fmt.Sprintf("%q is a hostname, not an IP address; Firefox rejects DNS names in ICE candidates, so %s", s, fix)
	}
	return fmt.Sprintf("%q is not an IP address; %s", s, fix)
}

func looksLikeHostname(s string) bool {
	if s == "" || strings.ContainsAny(s, ":/ ") {
		return false
	}
	letters := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		case r >= '0' && r <= '9', r == '.', r == '-':
		default:
			return false
		}
	}
	return letters
}

// MarshalYAML writes the address in its canonical text form.
func (ip IP) MarshalYAML() (any, error) { return ip.String(), nil }
