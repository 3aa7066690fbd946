package deploycheck

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// Debian 12 packages no Compose v2 plugin, so deploy.sh falls back to
// docker-compose 1.29 there: the file must load in that parser too.
// `config` needs no Docker engine.
func composeV1Config(t *testing.T, composeFile, envFile string) (stdout []byte, stderr string, err error) {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose (v1) is missing; install it: apt-get install -y --no-install-recommends docker-compose (scripts/deps.sh test does)")
	}
	cmd := exec.Command(bin, "--env-file", envFile, "-f", composeFile, "config")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	return out, errBuf.String(), err
}

func TestComposeFileLoadsInComposeV1(t *testing.T) {
	env := writeFile(t, t.TempDir(), ".env", "PUBLIC_IP=203.0.113.7\nPUBLISH_USER=publisher\nPUBLISH_PASS=0123456789abcdef0123456789abcdef\n")
	out, stderr, err := composeV1Config(t, repoFile(t, "docker-compose.yml"), env)
	if err != nil {
		t.Fatalf("docker-compose config: %v: %s", err, stderr)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Ports       []any             `yaml:"ports"`
			Build       struct {
				Args map[string]string `yaml:"args"`
			} `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("docker-compose config printed no YAML: %v\n%s", err, out)
	}
	svc, ok := doc.Services[ServiceName]
	if !ok {
		t.Fatalf("no service %s in:\n%s", ServiceName, out)
	}
	if got := svc.Environment[EnvPublicIPs]; got != "203.0.113.7" {
		t.Errorf("%s = %q; want 203.0.113.7", EnvPublicIPs, got)
	}
	if got := svc.Build.Args["VERSION"]; got != "dev" {
		t.Errorf("build arg VERSION = %q; want dev when SRTWHEP_VERSION is unset", got)
	}
	if len(svc.Ports) != len(Contract) {
		t.Errorf("%d ports; want %d:\n%s", len(svc.Ports), len(Contract), out)
	}
}

func TestComposeV1RefusesInvalidFile(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "docker-compose.yml", mutate(t, "docker-compose.yml", "restart: unless-stopped", "restartt: unless-stopped"))
	_, stderr, err := composeV1Config(t, bad, writeFile(t, dir, ".env", "PUBLIC_IP=203.0.113.7\nPUBLISH_USER=publisher\nPUBLISH_PASS=0123456789abcdef0123456789abcdef\n"))
	if err == nil {
		t.Fatal("docker-compose accepted an unknown key")
	}
	if !strings.Contains(stderr, "restartt") {
		t.Errorf("docker-compose failed for another reason than the unknown key: %s", stderr)
	}
}
