package deploycheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/tools/internal/srtrepo"
)

const imageConfigPath = "/etc/srtwhep/srtwhep.yml"

// repoFile returns the path of a file of the server's repository, which
// holds this module in tools/.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(srtrepo.Root(t), name)
}

func serverConfig(t *testing.T) *ServerConfig {
	t.Helper()
	cfg, err := LoadServerConfig(repoFile(t, "configs/srtwhep.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func reportProblems(t *testing.T, what string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
}

func TestServerConfigOpensTheContractPorts(t *testing.T) {
	reportProblems(t, "configs/srtwhep.yml", CheckConfig(serverConfig(t)))
}

func TestComposeFileMatchesContract(t *testing.T) {
	cfg := serverConfig(t)
	p, err := LoadCompose(context.Background(), repoFile(t, "docker-compose.yml"), publishEnv(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	reportProblems(t, "docker-compose.yml", CheckCompose(p, cfg))
	svc := p.Services[ServiceName]
	if v := svc.Environment[EnvPublicIPs]; v == nil || *v != "" {
		t.Errorf("without .env, %s = %v; want empty (an empty list to the server)", EnvPublicIPs, v)
	}
	if key, ok := cfg.EnvKey(EnvPublicIPs); !ok || key != "webrtc.publicIPs" {
		t.Errorf("%s maps to %q (%v); want webrtc.publicIPs", EnvPublicIPs, key, ok)
	}
}

func TestComposePublicIPFromDotEnv(t *testing.T) {
	env := writeFile(t, t.TempDir(), ".env", "PUBLIC_IP=203.0.113.7\nPUBLISH_USER=publisher\nPUBLISH_PASS=0123456789abcdef0123456789abcdef\n")
	p, err := LoadCompose(context.Background(), repoFile(t, "docker-compose.yml"), env)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Services[ServiceName].Environment[EnvPublicIPs]
	if v == nil || *v != "203.0.113.7" {
		t.Fatalf("with .env PUBLIC_IP=203.0.113.7, %s = %v; want 203.0.113.7", EnvPublicIPs, v)
	}
}

func TestDockerfileMatchesContract(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := ParseDockerfile(data)
	if err != nil {
		t.Fatal(err)
	}
	reportProblems(t, "Dockerfile", CheckDockerfile(df, serverConfig(t), imageConfigPath))

	// GOTOOLCHAIN=local in the build stage: the image's Go must be the
	// go.mod's major.minor, or the build fails on a fresh host.
	mod, err := os.ReadFile(repoFile(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine string
	for l := range strings.Lines(string(mod)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "go "); ok {
			goLine = v
		}
	}
	parts := strings.SplitN(goLine, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("go.mod go line %q", goLine)
	}
	want := "golang:" + parts[0] + "." + parts[1] + "-bookworm"
	if len(df.Bases) < 2 || df.Bases[0] != want || df.Bases[len(df.Bases)-1] != "debian:bookworm-slim" {
		t.Errorf("stages FROM %q; want %s then debian:bookworm-slim", df.Bases, want)
	}
}

func TestDockerfileLintClean(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(repoFile(t, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := LintDockerfile("Dockerfile", data, ignore)
	if err != nil {
		t.Fatal(err)
	}
	reportProblems(t, "Dockerfile lint", warnings)
}

// publishEnv writes dir/.env with the publish credentials deploy.sh
// generates, which the compose file requires, and nothing else.
func publishEnv(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, ".env", "PUBLISH_USER=publisher\nPUBLISH_PASS=0123456789abcdef0123456789abcdef\n")
}

// TestComposeRequiresPublishCredentials: without publish credentials in
// .env the compose file does not start an open server, and says why; the
// credentials reach the server as pathDefaults overrides; empty ones are
// an open server on purpose.
func TestComposeRequiresPublishCredentials(t *testing.T) {
	_, err := LoadCompose(context.Background(), repoFile(t, "docker-compose.yml"), "")
	if err == nil || !strings.Contains(err.Error(), "set PUBLISH_USER and PUBLISH_PASS in .env (./deploy.sh generates them)") {
		t.Errorf("compose without PUBLISH_USER/PUBLISH_PASS: %v; want refused with the fix", err)
	}
	cfg := serverConfig(t)
	p, err := LoadCompose(context.Background(), repoFile(t, "docker-compose.yml"), publishEnv(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	env := p.Services[ServiceName].Environment
	for name, want := range map[string]string{
		"SRTWHEP_PATHDEFAULTS_PUBLISHUSER": "publisher", "SRTWHEP_PATHDEFAULTS_PUBLISHPASS": "0123456789abcdef0123456789abcdef",
	} {
		if v := env[name]; v == nil || *v != want {
			t.Errorf("%s = %v; want %q from .env", name, v, want)
		}
		if _, ok := cfg.EnvKey(name); !ok {
			t.Errorf("%s matches no config key", name)
		}
	}
	open := writeFile(t, t.TempDir(), ".env", "PUBLISH_USER=\nPUBLISH_PASS=\n")
	if _, err := LoadCompose(context.Background(), repoFile(t, "docker-compose.yml"), open); err != nil {
		t.Errorf("empty credentials (open on purpose): %v", err)
	}
}
