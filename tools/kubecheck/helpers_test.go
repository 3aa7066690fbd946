package kubecheck

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/srtwhep/srtwhep/tools/deploycheck"
	"github.com/srtwhep/srtwhep/tools/internal/srtrepo"
)

const manifestDir = "deploy/kubernetes"

// binDir holds the server binary the tests build once for its -check.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubecheck-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var built struct {
	once sync.Once
	path string
	err  error
}

// server builds cmd/srtwhep once, so that every config is judged by the
// loader the pods will run.
func server(t *testing.T) Server {
	t.Helper()
	root := srtrepo.Root(t)
	built.once.Do(func() {
		// make test builds the server once for all its test processes
		// (TESTKIT_BINDIR, as internal/testkit.BuildBinary reads it).
		if dir := os.Getenv("TESTKIT_BINDIR"); dir != "" {
			if info, err := os.Stat(filepath.Join(dir, "srtwhep")); err == nil && info.Mode().IsRegular() {
				built.path = filepath.Join(dir, "srtwhep")
				return
			}
		}
		out := filepath.Join(binDir, "srtwhep")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", out, "./cmd/srtwhep")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building cmd/srtwhep for its -check (it needs the cgo build dependencies: make deps MODE=build): %v\n%s", err, b)
			return
		}
		built.path = out
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return &memo{s: Binary(built.path), seen: map[string]memoResult{}}
}

// memo runs the server once per distinct config and environment: most
// fault cases change neither, and the answer cannot differ.
type memo struct {
	s    Server
	mu   sync.Mutex
	seen map[string]memoResult
}

type memoResult struct {
	cfg *deploycheck.ServerConfig
	err error
}

func (m *memo) Effective(name string, config []byte, env map[string]string) (*deploycheck.ServerConfig, error) {
	vars := make([]string, 0, len(env))
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	slices.Sort(vars)
	key := name + "\x00" + string(config) + "\x00" + strings.Join(vars, "\x00")
	m.mu.Lock()
	r, ok := m.seen[key]
	m.mu.Unlock()
	if !ok {
		r.cfg, r.err = m.s.Effective(name, config, env)
		m.mu.Lock()
		m.seen[key] = r
		m.mu.Unlock()
	}
	return r.cfg, r.err
}

func expect(t *testing.T) Expect {
	t.Helper()
	root := srtrepo.Root(t)
	// The compose file requires the publish credentials deploy.sh writes.
	env := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(env, []byte("PUBLISH_USER=publisher\nPUBLISH_PASS=0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := deploycheck.LoadCompose(context.Background(), filepath.Join(root, "docker-compose.yml"), env)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := Routes(filepath.Join(root, "pkg", "web"))
	if err != nil {
		t.Fatal(err)
	}
	return Expect{
		Namespace: "srtwhep",
		Image:     p.Services[deploycheck.ServiceName].Image,
		Routes:    routes,
		Server:    server(t),
	}
}

// copyManifests copies the manifest directory into a temporary one with
// old replaced by new, once, in file; a pattern that no longer occurs
// exactly once means the test case needs updating.
func copyManifests(t *testing.T, file, old, new string) string {
	t.Helper()
	src := filepath.Join(srtrepo.Root(t), manifestDir)
	dst := t.TempDir()
	found := false
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.ToSlash(rel) == file {
			if n := strings.Count(string(data), old); n != 1 {
				t.Fatalf("%s contains %q %d times, not once; update this test case", file, old, n)
			}
			data = []byte(strings.Replace(string(data), old, new, 1))
			found = true
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no manifest %s", file)
	}
	return dst
}

func wantProblem(t *testing.T, problems []string, substr string) {
	t.Helper()
	for _, p := range problems {
		if strings.Contains(p, substr) {
			return
		}
	}
	t.Errorf("no problem mentions %q; got %d:\n%s", substr, len(problems), strings.Join(problems, "\n"))
}
