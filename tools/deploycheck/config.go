// Package deploycheck checks the deploy files (Dockerfile, docker-compose.yml)
// against the server's contract (DESIGN.md §1) and its config file, without a
// Docker engine: compose-go loads the compose file the way `docker compose`
// does, and buildkit's linter runs the `docker build --check` rules.
//
// It lives in its own module (tools/) so the server's go.mod does not carry
// compose-go and buildkit.
package deploycheck

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Port is a port number with its transport, "tcp" or "udp".
type Port struct {
	Number uint32
	Proto  string
}

func (p Port) String() string { return fmt.Sprintf("%d/%s", p.Number, p.Proto) }

// Contract lists the ports of DESIGN.md §1: SRT, HTTP, WebRTC UDP mux,
// ICE-TCP, metrics.
var Contract = []Port{{8890, "udp"}, {8889, "tcp"}, {8189, "udp"}, {8189, "tcp"}, {9998, "tcp"}}

// PrivatePort is published on loopback only: metrics are for the host's own
// monitoring.
var PrivatePort = Port{9998, "tcp"}

// EnvPrefix starts the server's environment overrides (pkg/config).
const EnvPrefix = "SRTWHEP_"

// ServerConfig is configs/srtwhep.yml as a generic YAML tree, so the checks
// see the file users copy, not a Go struct that could drift from it.
type ServerConfig struct {
	path string
	tree map[string]any
}

// LoadServerConfig parses the server's YAML config file.
func LoadServerConfig(path string) (*ServerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the server config: %w", err)
	}
	return ParseServerConfig(path, data)
}

// ParseServerConfig parses a config held elsewhere than in a file of its
// own (a Kubernetes ConfigMap, `srtwhep -check` output); name stands for
// it in errors.
func ParseServerConfig(name string, data []byte) (*ServerConfig, error) {
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &ServerConfig{path: name, tree: tree}, nil
}

// value returns section.key, or false when the file lacks it.
func (c *ServerConfig) value(section, key string) (any, bool) {
	sec, ok := c.tree[section].(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := sec[key]
	return v, ok
}

// Value returns the value of a dotted key of the first two levels
// (pathDefaults.source, logLevel), or false when the config lacks it.
func (c *ServerConfig) Value(key string) (any, bool) {
	section, sub, ok := strings.Cut(key, ".")
	if !ok {
		v, ok := c.tree[key]
		return v, ok
	}
	return c.value(section, sub)
}

// Listener is what one listening key of the config opens: the port, and
// the address it is bound to ("" for every address).
type Listener struct {
	Port
	Host string
}

// Loopback reports whether nothing outside the host (or pod) can reach it.
func (l Listener) Loopback() bool {
	if l.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(l.Host)
	return ip != nil && ip.IsLoopback()
}

// Ports returns the port each listening key of the config opens, keyed by
// the key's dotted name (srt.listen → 8890/udp).
func (c *ServerConfig) Ports() (map[string]Port, error) {
	ls, err := c.Listeners()
	if err != nil {
		return nil, err
	}
	ports := make(map[string]Port, len(ls))
	for k, l := range ls {
		ports[k] = l.Port
	}
	return ports, nil
}

// Listeners returns what each listening key of the config opens, keyed by
// the key's dotted name (srt.listen → :8890, udp).
func (c *ServerConfig) Listeners() (map[string]Listener, error) {
	keys := []struct {
		section, key, proto string
	}{
		{"srt", "listen", "udp"},
		{"http", "listen", "tcp"},
		{"webrtc", "udpPort", "udp"},
		{"webrtc", "tcpPort", "tcp"},
		{"metrics", "listen", "tcp"},
	}
	ls := make(map[string]Listener, len(keys))
	for _, k := range keys {
		name := k.section + "." + k.key
		v, ok := c.value(k.section, k.key)
		if !ok {
			return nil, fmt.Errorf("%s has no %s; restore it from the defaults in pkg/config", c.path, name)
		}
		host, n, err := listenOf(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.path, name, err)
		}
		if k.section == "webrtc" {
			// The media ports bind to webrtc.listenIP.
			if ip, ok := c.value("webrtc", "listenIP"); ok {
				host, _ = ip.(string)
			}
		}
		ls[name] = Listener{Port{n, k.proto}, host}
	}
	return ls, nil
}

// listenOf reads a port from a number (udpPort: 8189) or an address
// (listen: ":8890"), with the address's host part.
func listenOf(v any) (string, uint32, error) {
	var host, s string
	switch v := v.(type) {
	case int:
		s = strconv.Itoa(v)
	case string:
		h, p, err := net.SplitHostPort(v)
		if err != nil {
			return "", 0, fmt.Errorf("%q is not HOST:PORT: %w", v, err)
		}
		host, s = h, p
	default:
		return "", 0, fmt.Errorf("%v (%T) is neither a port nor an address", v, v)
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("%q is not a port number between 1 and 65535", s)
	}
	return host, uint32(n), nil
}

// EnvKey maps an override variable to the config key it sets, matching
// case-insensitively the way pkg/config does: SRTWHEP_WEBRTC_PUBLICIPS →
// webrtc.publicIPs. It returns false for a variable the server would refuse.
func (c *ServerConfig) EnvKey(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, EnvPrefix)
	if !ok {
		return "", false
	}
	for top, v := range c.tree {
		if strings.EqualFold(rest, top) {
			return top, true
		}
		sec, ok := v.(map[string]any)
		if !ok || top == "paths" {
			continue
		}
		for key := range sec {
			if strings.EqualFold(rest, top+"_"+key) {
				return top + "." + key, true
			}
		}
	}
	return "", false
}

// CheckConfig returns every way the ports cfg opens depart from the
// contract; nil means none.
func CheckConfig(cfg *ServerConfig) []string {
	ports, err := cfg.Ports()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	seen := map[Port]bool{}
	for key, p := range ports {
		if !slices.Contains(Contract, p) {
			problems = append(problems, fmt.Sprintf("%s opens %s, which is not in the contract %v", key, p, Contract))
		}
		seen[p] = true
	}
	for _, want := range Contract {
		if !seen[want] {
			problems = append(problems, fmt.Sprintf("no key of %s opens %s", cfg.path, want))
		}
	}
	slices.Sort(problems)
	return problems
}
