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
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &ServerConfig{path: path, tree: tree}, nil
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

// Ports returns the port each listening key of the config opens, keyed by
// the key's dotted name (srt.listen → 8890/udp).
func (c *ServerConfig) Ports() (map[string]Port, error) {
	keys := []struct {
		section, key, proto string
	}{
		{"srt", "listen", "udp"},
		{"http", "listen", "tcp"},
		{"webrtc", "udpPort", "udp"},
		{"webrtc", "tcpPort", "tcp"},
		{"metrics", "listen", "tcp"},
	}
	ports := make(map[string]Port, len(keys))
	for _, k := range keys {
		name := k.section + "." + k.key
		v, ok := c.value(k.section, k.key)
		if !ok {
			return nil, fmt.Errorf("%s has no %s; restore it from the defaults in pkg/config", c.path, name)
		}
		n, err := portOf(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", c.path, name, err)
		}
		ports[name] = Port{n, k.proto}
	}
	return ports, nil
}

// portOf reads a port from a number (udpPort: 8189) or an address
// (listen: ":8890").
func portOf(v any) (uint32, error) {
	var s string
	switch v := v.(type) {
	case int:
		s = strconv.Itoa(v)
	case string:
		_, p, err := net.SplitHostPort(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not HOST:PORT: %w", v, err)
		}
		s = p
	default:
		return 0, fmt.Errorf("%v (%T) is neither a port nor an address", v, v)
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port number between 1 and 65535", s)
	}
	return uint32(n), nil
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
