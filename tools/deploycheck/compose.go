package deploycheck

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// ServiceName is the compose service deploy.sh waits for.
const ServiceName = "srtwhep"

// PublicIPVar is the variable deploy.sh writes to .env, and EnvPublicIPs the
// server override it must become.
const (
	PublicIPVar  = "PUBLIC_IP"
	EnvPublicIPs = "SRTWHEP_WEBRTC_PUBLICIPS"
)

// Limits a 1 vCPU / 2 GB host can give the container and still keep room
// for the kernel and Docker.
const (
	maxCPUs     = 1.0
	maxMemBytes = 3 << 29 // 1.5 GiB
)

// LoadCompose loads a compose file the way `docker compose` does (schema
// validation, interpolation, normalisation). envFile, when not "", plays the
// part of the .env that deploy.sh writes. The process environment is not
// read, so a PUBLIC_IP set in the caller's shell cannot change the result.
func LoadCompose(ctx context.Context, composeFile, envFile string) (*types.Project, error) {
	fns := []cli.ProjectOptionsFn{
		cli.WithName("srtwhep"),
		cli.WithWorkingDirectory(filepath.Dir(composeFile)),
	}
	if envFile != "" {
		fns = append(fns, cli.WithEnvFiles(envFile), cli.WithDotEnv)
	}
	opts, err := cli.NewProjectOptions([]string{composeFile}, fns...)
	if err != nil {
		return nil, fmt.Errorf("compose options: %w", err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", composeFile, err)
	}
	return p, nil
}

// CheckCompose returns every way the srtwhep service of p departs from the
// contract and from the server config cfg; nil means none.
func CheckCompose(p *types.Project, cfg *ServerConfig) []string {
	svc, ok := p.Services[ServiceName]
	if !ok {
		return []string{fmt.Sprintf("no service %q; deploy.sh and the README use that name", ServiceName)}
	}
	problems := checkPublished(svc.Ports)

	if _, ok := svc.Environment[EnvPublicIPs]; !ok {
		problems = append(problems, fmt.Sprintf("environment lacks %s: ${%s:-}; without it WebRTC cannot connect through Docker's NAT", EnvPublicIPs, PublicIPVar))
	}
	for name := range svc.Environment {
		if !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		if _, ok := cfg.EnvKey(name); !ok {
			problems = append(problems, fmt.Sprintf("environment %s matches no key of configs/srtwhep.yml; the server refuses it at start-up", name))
		}
	}

	if svc.NetworkMode == "host" {
		problems = append(problems, "network_mode: host is the commented variant; the default must publish ports")
	}
	if svc.Restart != types.RestartPolicyUnlessStopped {
		problems = append(problems, fmt.Sprintf("restart is %q; want %q", svc.Restart, types.RestartPolicyUnlessStopped))
	}
	if svc.Logging == nil || svc.Logging.Driver != "json-file" || svc.Logging.Options["max-size"] == "" || svc.Logging.Options["max-file"] == "" {
		problems = append(problems, "logging must be json-file with max-size and max-file, or the log fills a small disk")
	}
	if svc.CPUS <= 0 || svc.CPUS > maxCPUs {
		problems = append(problems, fmt.Sprintf("cpus is %v; want a limit in (0, %v] for a 1 vCPU host", svc.CPUS, maxCPUs))
	}
	if svc.MemLimit <= 0 || svc.MemLimit > maxMemBytes {
		problems = append(problems, fmt.Sprintf("mem_limit is %d bytes; want a limit up to %d for a 2 GB host", svc.MemLimit, maxMemBytes))
	}
	return problems
}

// checkPublished wants exactly the contract ports, each with the same number
// inside and out (ICE candidates carry the container's port), and the
// private one bound to loopback only.
func checkPublished(ports []types.ServicePortConfig) []string {
	var problems []string
	seen := map[Port]bool{}
	for _, pc := range ports {
		port := Port{pc.Target, pc.Protocol}
		if port.Proto == "" {
			port.Proto = "tcp"
		}
		if !slices.Contains(Contract, port) {
			problems = append(problems, fmt.Sprintf("publishes %s, which is not in the contract %v", port, Contract))
			continue
		}
		if seen[port] {
			problems = append(problems, fmt.Sprintf("publishes %s twice", port))
		}
		seen[port] = true
		if pc.Published != strconv.FormatUint(uint64(pc.Target), 10) {
			problems = append(problems, fmt.Sprintf("%s is published on host port %q; it must be the same number outside and inside", port, pc.Published))
		}
		switch {
		case port == PrivatePort && pc.HostIP != "127.0.0.1":
			problems = append(problems, fmt.Sprintf("%s is bound to %q; bind it to 127.0.0.1 only", port, pc.HostIP))
		case port != PrivatePort && pc.HostIP != "" && pc.HostIP != "0.0.0.0":
			problems = append(problems, fmt.Sprintf("%s is bound to %s; publishers and viewers need it on every address", port, pc.HostIP))
		}
	}
	for _, want := range Contract {
		if !seen[want] {
			problems = append(problems, fmt.Sprintf("does not publish %s", want))
		}
	}
	return problems
}
