package deploycheck

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Dockerfile holds what the checks need from the final stage of a Dockerfile.
type Dockerfile struct {
	Bases       []string            // FROM of every stage, in order
	Expose      []Port              // EXPOSE of the final stage
	Healthcheck []string            // HEALTHCHECK test, e.g. ["CMD", "/usr/local/bin/srtwhep", "-probe", URL]
	Entrypoint  []string            // exec form only
	Cmd         []string            // exec form only
	User        string              // last USER of the final stage
	Copies      map[string][]string // final stage COPY (not --from) destination → sources
}

// ParseDockerfile reads the instructions of a Dockerfile.
func ParseDockerfile(data []byte) (*Dockerfile, error) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing the Dockerfile: %w", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing the Dockerfile: %w", err)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("the Dockerfile has no FROM")
	}
	df := &Dockerfile{Copies: map[string][]string{}}
	for _, st := range stages {
		df.Bases = append(df.Bases, st.BaseName)
	}
	for _, c := range stages[len(stages)-1].Commands {
		switch c := c.(type) {
		case *instructions.ExposeCommand:
			for _, s := range c.Ports {
				p, err := parseExpose(s)
				if err != nil {
					return nil, err
				}
				df.Expose = append(df.Expose, p)
			}
		case *instructions.HealthCheckCommand:
			df.Healthcheck = c.Health.Test
		case *instructions.EntrypointCommand:
			if !c.PrependShell {
				df.Entrypoint = c.CmdLine
			}
		case *instructions.CmdCommand:
			if !c.PrependShell {
				df.Cmd = c.CmdLine
			}
		case *instructions.UserCommand:
			df.User = c.User
		case *instructions.CopyCommand:
			if c.From == "" {
				df.Copies[c.DestPath] = c.SourcePaths
			}
		}
	}
	return df, nil
}

func parseExpose(s string) (Port, error) {
	num, proto, ok := strings.Cut(s, "/")
	if !ok {
		proto = "tcp"
	}
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil || n == 0 {
		return Port{}, fmt.Errorf("EXPOSE %s: not a port number", s)
	}
	return Port{uint32(n), strings.ToLower(proto)}, nil
}

// CheckDockerfile returns every way df departs from the contract and from
// the server config cfg (listen ports, health port); nil means none.
// configPath is where the image keeps the config a mount can replace.
func CheckDockerfile(df *Dockerfile, cfg *ServerConfig, configPath string) []string {
	var problems []string
	for _, want := range Contract {
		if !slices.Contains(df.Expose, want) {
			problems = append(problems, fmt.Sprintf("EXPOSE lacks %s", want))
		}
	}
	for _, p := range df.Expose {
		if !slices.Contains(Contract, p) {
			problems = append(problems, fmt.Sprintf("EXPOSE %s is not in the contract %v", p, Contract))
		}
	}

	switch df.User {
	case "", "root", "0", "0:0", "root:root":
		problems = append(problems, fmt.Sprintf("USER %q runs the server as root; use a numeric non-root uid", df.User))
	}

	if len(df.Entrypoint) == 0 {
		problems = append(problems, "ENTRYPOINT must be the server binary in exec form")
	}
	if !slices.Equal(df.Cmd, []string{"-config", configPath}) {
		problems = append(problems, fmt.Sprintf("CMD is %q; want [\"-config\", %q] so a mount at that path replaces the config", df.Cmd, configPath))
	}
	if src := df.Copies[configPath]; !slices.Equal(src, []string{"configs/srtwhep.yml"}) {
		problems = append(problems, fmt.Sprintf("the final stage must COPY configs/srtwhep.yml %s (found %q)", configPath, src))
	}

	problems = append(problems, checkHealthcheck(df, cfg)...)
	return problems
}

// checkHealthcheck wants the binary's own probe (no curl in the image) on
// /healthz at the port http.listen opens.
func checkHealthcheck(df *Dockerfile, cfg *ServerConfig) []string {
	hc := df.Healthcheck
	if len(hc) < 4 || hc[0] != "CMD" || len(df.Entrypoint) == 0 || hc[1] != df.Entrypoint[0] || hc[2] != "-probe" {
		return []string{fmt.Sprintf("HEALTHCHECK is %q; want CMD [ENTRYPOINT binary, \"-probe\", \"http://127.0.0.1:PORT/healthz\"]", hc)}
	}
	u, err := url.Parse(hc[3])
	if err != nil {
		return []string{fmt.Sprintf("HEALTHCHECK URL %q: %v", hc[3], err)}
	}
	ports, err := cfg.Ports()
	if err != nil {
		return []string{err.Error()}
	}
	want := fmt.Sprintf("127.0.0.1:%d", ports["http.listen"].Number)
	if u.Scheme != "http" || u.Host != want || u.Path != "/healthz" {
		return []string{fmt.Sprintf("HEALTHCHECK probes %s; want http://%s/healthz (http.listen of configs/srtwhep.yml)", hc[3], want)}
	}
	return nil
}
