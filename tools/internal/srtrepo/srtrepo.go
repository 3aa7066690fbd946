// Package srtrepo finds the server's repository from the tests of the
// tools module, which lives in its tools/ folder: the deploy files and
// the server the checks read are there.
package srtrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Root is the server's repository, two folders above a package of this
// module (go test runs a test in its package's folder); the test fails
// if that is not the srtwhep repository.
func Root(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/srtwhep/srtwhep\n") {
		t.Fatalf("%s is not the srtwhep repository (go.mod: %v); run the tests from tools/ inside it", root, err)
	}
	return root
}
