package deploycheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mutate returns the repository file with old replaced by new once; a
// pattern that no longer occurs means the fixture below needs updating.
func mutate(t *testing.T, name, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), old) != 1 {
		t.Fatalf("%s no longer contains %q exactly once; update this test case", name, old)
	}
	return strings.Replace(string(data), old, new, 1)
}

func wantProblem(t *testing.T, problems []string, substr string) {
	t.Helper()
	for _, p := range problems {
		if strings.Contains(p, substr) {
			return
		}
	}
	t.Errorf("no problem mentions %q; got %q", substr, problems)
}

func TestCheckComposeFindsFaults(t *testing.T) {
	cfg := serverConfig(t)
	cases := []struct {
		name, old, new, want string
	}{
		{"port remapped", `"8189:8189/udp"`, `"8190:8189/udp"`, `8189/udp is published on host port "8190"`},
		{"metrics public", `"127.0.0.1:9998:9998/tcp"`, `"9998:9998/tcp"`, "bind it to 127.0.0.1 only"},
		{"SRT port missing", `- "8890:8890/udp"`, ``, "does not publish 8890/udp"},
		{"extra port", `- "8889:8889/tcp"`, `- "8889:8889/tcp"` + "\n      - \"8080:8080/tcp\"", "publishes 8080/tcp, which is not in the contract"},
		{"no public IP", `SRTWHEP_WEBRTC_PUBLICIPS: "${PUBLIC_IP:-}"`, `SRTWHEP_LOGLEVEL: info`, "environment lacks SRTWHEP_WEBRTC_PUBLICIPS"},
		{"misspelt override", `SRTWHEP_WEBRTC_PUBLICIPS: "${PUBLIC_IP:-}"`, `SRTWHEP_WEBRTC_PUBLICIPS: "${PUBLIC_IP:-}"` + "\n      SRTWHEP_WEBRTC_PUBLICIP: x", "SRTWHEP_WEBRTC_PUBLICIP matches no key"},
		{"restart", `restart: unless-stopped`, `restart: always`, `restart is "always"`},
		{"memory", `mem_limit: 1g`, `mem_limit: 4g`, "mem_limit is"},
		{"no cpu limit", `cpus: 1.0`, ``, "cpus is 0"},
		{"no log rotation", `max-size: "10m"`, ``, "logging must be json-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "docker-compose.yml", mutate(t, "docker-compose.yml", tc.old, tc.new))
			p, err := LoadCompose(context.Background(), path, publishEnv(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			wantProblem(t, CheckCompose(p, cfg), tc.want)
		})
	}
}

func TestLoadComposeRefusesInvalidFile(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"ports not a list": "services:\n  srtwhep:\n    image: x\n    ports: \"8889:8889\"\n",
		"unknown key":      "services:\n  srtwhep:\n    image: x\n    restartt: always\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yml", content)
			if _, err := LoadCompose(context.Background(), path, ""); err == nil {
				t.Fatalf("loaded %q without an error", content)
			}
		})
	}
}

func TestCheckDockerfileFindsFaults(t *testing.T) {
	cfg := serverConfig(t)
	cases := []struct {
		name, old, new, want string
	}{
		{"EXPOSE drifts", "8889/tcp 8189/udp", "8080/tcp 8189/udp", "EXPOSE lacks 8889/tcp"},
		{"root", "USER 10001:10001", "USER root", `USER "root"`},
		{"health port", "http://127.0.0.1:8889/healthz", "http://127.0.0.1:8080/healthz", "HEALTHCHECK probes"},
		{"config path", `CMD ["-config", "/etc/srtwhep/srtwhep.yml"]`, `CMD ["-config", "/srtwhep.yml"]`, "CMD is"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			df, err := ParseDockerfile([]byte(mutate(t, "Dockerfile", tc.old, tc.new)))
			if err != nil {
				t.Fatal(err)
			}
			wantProblem(t, CheckDockerfile(df, cfg, imageConfigPath), tc.want)
		})
	}
}

func TestLintDockerfileFindsFaults(t *testing.T) {
	bad := "FROM debian:bookworm-slim as base\nENV A 1\nCMD echo hi\n"
	warnings, err := LintDockerfile("Dockerfile", []byte(bad), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"FromAsCasing", "LegacyKeyValueFormat", "JSONArgsRecommended"} {
		wantProblem(t, warnings, rule)
	}
	if _, err := LintDockerfile("Dockerfile", []byte("FROMM debian:bookworm-slim\n"), nil); err == nil {
		t.Error("an unknown instruction linted without an error")
	}
}

func TestCheckConfigFindsFaults(t *testing.T) {
	data := mutate(t, "configs/srtwhep.yml", `listen: ":8889"`, `listen: ":8080"`)
	cfg, err := LoadServerConfig(writeFile(t, t.TempDir(), "srtwhep.yml", data))
	if err != nil {
		t.Fatal(err)
	}
	problems := CheckConfig(cfg)
	wantProblem(t, problems, "http.listen opens 8080/tcp")
	wantProblem(t, problems, "opens 8889/tcp")

	missing := filepath.Join(t.TempDir(), "srtwhep.yml")
	writeFile(t, filepath.Dir(missing), "srtwhep.yml", "srt:\n  listen: \":8890\"\n")
	cfg, err = LoadServerConfig(missing)
	if err != nil {
		t.Fatal(err)
	}
	wantProblem(t, CheckConfig(cfg), "has no http.listen")
}
