package deploycheck

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// These tests run the real deploy.sh in --dry-run mode. It must not install
// packages, touch Docker or the firewall, nor leave loopback: PATH starts
// with a directory whose docker, apt-get, ufw, ... record any call and fail,
// and the metadata service is either a loopback httptest server or off.

// trappedTools would change the host or talk to Docker; dry-run calls none.
var trappedTools = []string{"docker", "docker-compose", "apt-get", "apt-cache", "ufw", "systemctl", "sudo", "sysctl", "tee"}

type deployRun struct {
	stdout, stderr string
	err            error
	envFile        string
}

// runDeploy runs deploy.sh with args; env holds extra variables. Unless env
// points DEPLOY_METADATA_URL or DEPLOY_STUN_SERVER at loopback, those
// lookups are off, so nothing but loopback is ever contacted.
func runDeploy(t *testing.T, envFile string, env []string, args ...string) deployRun {
	t.Helper()
	trap := t.TempDir()
	calls := filepath.Join(trap, "calls.log")
	for _, tool := range trappedTools {
		script := "#!/bin/sh\necho \"$0 $*\" >> '" + calls + "'\nexit 97\n"
		if err := os.WriteFile(filepath.Join(trap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	full := []string{
		"PATH=" + trap + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"LANG=C",
	}
	// Lookups the test does not point at loopback are off; later entries win.
	full = append(full, "DEPLOY_METADATA_URL=", "DEPLOY_STUN_SERVER=")
	full = append(full, env...)

	cmd := exec.Command("bash", append([]string{repoFile(t, "deploy.sh"), "--dry-run", "--env-file", envFile}, args...)...)
	cmd.Env = full
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if data, rerr := os.ReadFile(calls); rerr == nil {
		t.Fatalf("dry-run called tools it must only print:\n%s\nstderr:\n%s", data, stderr.String())
	}
	return deployRun{stdout.String(), stderr.String(), err, envFile}
}

// env is the env file without the publish credentials, which are random
// (TestDeployPublishSecret checks them).
func (r deployRun) env(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(r.envFile)
	if err != nil {
		t.Fatalf("reading the env file: %v\nstderr:\n%s", err, r.stderr)
	}
	var keep []string
	for line := range strings.SplitAfterSeq(string(data), "\n") {
		if !strings.HasPrefix(line, "PUBLISH_USER=") && !strings.HasPrefix(line, "PUBLISH_PASS=") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

// TestDeployPublishSecret: the first install generates publish
// credentials into the env file (owner-only), prints both streamid forms
// and the OBS server URL carrying them, and a rerun keeps them; an empty
// PUBLISH_PASS= the operator wrote stays empty and is warned about.
func TestDeployPublishSecret(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), ".env")
	r := runDeploy(t, envFile, []string{"PUBLIC_IP=203.0.113.7"}).ok(t)
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PUBLISH_USER=(publisher)\nPUBLISH_PASS=([0-9a-f]{32})$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("env file = %q; want PUBLISH_USER=publisher and a 32-hex-digit PUBLISH_PASS", data)
	}
	if fi, err := os.Stat(envFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v (%v); want 0600, it holds the publish secret", fi.Mode().Perm(), err)
	}
	user, pass := m[1], m[2]
	for _, want := range []string{
		"-f mpegts 'srt://203.0.113.7:8890?streamid=publish:live/cam1:" + user + ":" + pass + "'",
		"-f mpegts 'srt://203.0.113.7:8890?streamid=#!::r=live/cam1,m=publish,u=" + user + ",s=" + pass + "'",
		"Server: srt://203.0.113.7:8890?streamid=publish:live/cam1:" + user + ":" + pass,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	runDeploy(t, envFile, []string{"PUBLIC_IP=203.0.113.7"}).ok(t)
	if again, _ := os.ReadFile(envFile); string(again) != string(data) {
		t.Errorf("a rerun changed the env file:\n%s\nwas:\n%s", again, data)
	}

	open := writeFile(t, t.TempDir(), ".env", "PUBLISH_USER=\nPUBLISH_PASS=\n")
	r = runDeploy(t, open, []string{"PUBLIC_IP=203.0.113.7"}).ok(t)
	if got, _ := os.ReadFile(open); string(got) != "PUBLISH_USER=\nPUBLISH_PASS=\nPUBLIC_IP=203.0.113.7\n" {
		t.Errorf("an open install's env file became %q; want its empty credentials kept", got)
	}
	if !strings.Contains(r.stdout, "streamid=publish:live/cam1'") || !strings.Contains(r.stdout, "anyone who can reach the SRT port may publish") {
		t.Errorf("open install: stdout lacks the plain URL or the warning:\n%s", r.stdout)
	}
}

func (r deployRun) ok(t *testing.T) deployRun {
	t.Helper()
	if r.err != nil {
		t.Fatalf("deploy.sh: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
	return r
}

func TestDeployDryRunGivenIP(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), ".env")
	r := runDeploy(t, envFile, []string{"PUBLIC_IP=203.0.113.7"}).ok(t)
	if got := r.env(t); got != "PUBLIC_IP=203.0.113.7\n" {
		t.Errorf("env file = %q; want PUBLIC_IP=203.0.113.7", got)
	}
	for _, want := range []string{
		"up -d --build",
		"env SRTWHEP_VERSION=", // the image's version, from git describe
		"http://127.0.0.1:8889/readyz",
		"-bf 0",
		"-f mpegts 'srt://203.0.113.7:8890?streamid=publish:live/cam1:publisher:",
		"http://203.0.113.7:8889/live/cam1",
		"--env-file " + envFile,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestDeployEnvFileIdempotent(t *testing.T) {
	envFile := writeFile(t, t.TempDir(), ".env", "COMPOSE_PROJECT_NAME=cam\nPUBLIC_IP=198.51.100.1\n")
	want := "COMPOSE_PROJECT_NAME=cam\nPUBLIC_IP=203.0.113.7\n"
	r := runDeploy(t, envFile, nil, "--public-ip", "203.0.113.7").ok(t)
	if got := r.env(t); got != want {
		t.Fatalf("first run: env file = %q; want %q", got, want)
	}
	r = runDeploy(t, envFile, nil, "--public-ip=203.0.113.7").ok(t)
	if got := r.env(t); got != want {
		t.Fatalf("second run: env file = %q; want %q", got, want)
	}
	if !strings.Contains(r.stderr, "already has PUBLIC_IP=203.0.113.7") {
		t.Errorf("second run did not notice the file was up to date:\n%s", r.stderr)
	}
}

func TestDeployRefusesHostname(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), ".env")
	r := runDeploy(t, envFile, []string{"PUBLIC_IP=stream.example.org"})
	if r.err == nil {
		t.Fatalf("a hostname was accepted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "is not an IP address") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the env file was written after a refusal (stat: %v)", err)
	}
}

// metadataServer emulates one cloud's metadata endpoint on loopback: it
// answers the address only on that cloud's path with that cloud's header.
func metadataServer(t *testing.T, cloud string) *httptest.Server {
	t.Helper()
	const ip = "198.51.100.23"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {})
	switch cloud {
	case "aws":
		mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				http.Error(w, "no ttl", http.StatusBadRequest)
				return
			}
			w.Write([]byte("tok-123"))
		})
		mux.HandleFunc("GET /latest/meta-data/public-ipv4", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-aws-ec2-metadata-token") != "tok-123" {
				http.Error(w, "IMDSv2 token required", http.StatusUnauthorized)
				return
			}
			w.Write([]byte(ip))
		})
	case "gcp":
		mux.HandleFunc("GET /computeMetadata/v1/instance/network-interfaces/0/access-configs/0/external-ip", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Metadata-Flavor") != "Google" {
				http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
				return
			}
			w.Write([]byte(ip))
		})
	case "hetzner":
		mux.HandleFunc("GET /hetzner/v1/metadata/public-ipv4", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(ip + "\n"))
		})
	default:
		t.Fatalf("no emulation for %s", cloud)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDeployPublicIPFromMetadata(t *testing.T) {
	for _, cloud := range []string{"aws", "gcp", "hetzner"} {
		t.Run(cloud, func(t *testing.T) {
			srv := metadataServer(t, cloud)
			envFile := filepath.Join(t.TempDir(), ".env")
			r := runDeploy(t, envFile, []string{"DEPLOY_METADATA_URL=" + srv.URL}).ok(t)
			if got := r.env(t); got != "PUBLIC_IP=198.51.100.23\n" {
				t.Errorf("env file = %q; want PUBLIC_IP=198.51.100.23\nstderr:\n%s", got, r.stderr)
			}
			if !strings.Contains(r.stderr, "(metadata: "+cloud+")") {
				t.Errorf("stderr does not name %s as the source:\n%s", cloud, r.stderr)
			}
		})
	}
}

// routeSource is what `ip route get` reports as the source towards the
// internet, found the Go way: connecting a UDP socket sends nothing.
func routeSource(t *testing.T) string {
	t.Helper()
	c, err := net.Dial("udp4", "192.0.2.1:9")
	if err != nil {
		return ""
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

func TestDeployFallsBackWithoutMetadata(t *testing.T) {
	// A loopback port nothing listens on: the metadata probe is refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	want := routeSource(t)
	cases := map[string]struct {
		env  []string
		args []string
	}{
		"unreachable": {env: []string{"DEPLOY_METADATA_URL=" + closed}},
		"no-metadata": {args: []string{"--no-metadata"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			envFile := filepath.Join(t.TempDir(), ".env")
			r := runDeploy(t, envFile, tc.env, tc.args...).ok(t)
			if got := r.env(t); got != "PUBLIC_IP="+want+"\n" {
				t.Errorf("env file = %q; want PUBLIC_IP=%s (the route source; install iproute2 if 'ip' is missing)\nstderr:\n%s", got, want, r.stderr)
			}
			ip := net.ParseIP(want)
			if (ip == nil || ip.IsPrivate() || ip.IsLoopback()) && !strings.Contains(r.stderr, "WARNING") {
				t.Errorf("no warning for a missing or private address %q:\n%s", want, r.stderr)
			}
			if strings.Contains(r.stderr, "metadata:") {
				t.Errorf("claims a metadata answer:\n%s", r.stderr)
			}
		})
	}
}

func TestDeployUninstallDryRun(t *testing.T) {
	envFile := writeFile(t, t.TempDir(), ".env", "PUBLIC_IP=203.0.113.7\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--uninstall"}, "down --remove-orphans\n"},
		{[]string{"--uninstall", "--purge"}, "down --remove-orphans --rmi all\n"},
	} {
		r := runDeploy(t, envFile, nil, tc.args...).ok(t)
		if !strings.Contains(r.stdout, tc.want) || !strings.Contains(r.stdout, "rm -f "+envFile) {
			t.Errorf("%v: stdout lacks %q or the env file removal:\n%s", tc.args, tc.want, r.stdout)
		}
		if got := r.env(t); got != "PUBLIC_IP=203.0.113.7\n" {
			t.Errorf("%v: dry-run changed the env file to %q", tc.args, got)
		}
	}
	if r := runDeploy(t, envFile, nil, "--purge"); r.err == nil {
		t.Error("--purge without --uninstall was accepted")
	}
}
