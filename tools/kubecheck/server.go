package kubecheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/srtwhep/srtwhep/tools/deploycheck"
)

// Server validates a config the way the server itself does at start-up.
type Server interface {
	// Effective loads config (the contents of a file called name) with
	// env as the process environment and returns the configuration that
	// results, or the server's own error.
	Effective(name string, config []byte, env map[string]string) (*deploycheck.ServerConfig, error)
}

// Binary runs `srtwhep -check` of a built server: its config loader, its
// SRTWHEP_* overrides and its validation, with nothing re-implemented
// here that could drift from it.
type Binary string

// Effective implements Server.
func (b Binary) Effective(name string, config []byte, env map[string]string) (*deploycheck.ServerConfig, error) {
	dir, err := os.MkdirTemp("", "kubecheck-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "srtwhep.yml")
	if err := os.WriteFile(file, config, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(string(b), "-check", "-config", file)
	// Only the pod's variables: none of this process's SRTWHEP_* may leak
	// into the result.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(strings.ReplaceAll(stderr.String(), file, name))
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("srtwhep -check refuses it: %s", msg)
	}
	return deploycheck.ParseServerConfig(name+" (effective)", stdout.Bytes())
}

// Routes returns the paths the server's HTTP listener answers GET on by
// itself (health checks), read from the calls that register them in the
// Go source of pkg/web, so a probe cannot name a path the server lacks.
func Routes(webDir string) ([]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(webDir, "*.go"))
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			pattern, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if path, ok := strings.CutPrefix(pattern, "GET "); ok {
				routes = append(routes, path)
			}
			return true
		})
	}
	if len(routes) == 0 {
		return nil, fmt.Errorf("no GET route registered in %s; has the HTTP listener moved?", webDir)
	}
	slices.Sort(routes)
	return routes, nil
}
