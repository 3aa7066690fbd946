package kubecheck

import (
	"path/filepath"
	"testing"

	"github.com/srtwhep/srtwhep/tools/internal/srtrepo"
)

func TestRoutesAreTheServers(t *testing.T) {
	routes, err := Routes(filepath.Join(srtrepo.Root(t), "pkg", "web"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{alivePath, readyPath} {
		found := false
		for _, r := range routes {
			found = found || r == want
		}
		if !found {
			t.Errorf("pkg/web serves GET %v; the contract (DESIGN.md §1) has %s", routes, want)
		}
	}
	if _, err := Routes(t.TempDir()); err == nil {
		t.Error("a directory without routes gave no error")
	}
}
