package kubecheck

import (
	"path/filepath"
	"testing"

	"github.com/srtwhep/srtwhep/tools/internal/srtrepo"
)

func TestManifestsDecodeStrictly(t *testing.T) {
	m, problems := Load(filepath.Join(srtrepo.Root(t), manifestDir))
	for _, p := range problems {
		t.Error(p)
	}
	count := map[string]int{}
	for _, o := range m.Objects {
		count[o.GVK.Kind]++
	}
	// Every kind the checks know is in use, so none of them checks nothing.
	for _, k := range kinds {
		if count[k.Kind] == 0 {
			t.Errorf("no %s among the manifests", k.Kind)
		}
	}
	t.Logf("%d files, %d objects: %v", len(m.Files), len(m.Objects), count)
}

func TestManifestsAgree(t *testing.T) {
	m, problems := Load(filepath.Join(srtrepo.Root(t), manifestDir))
	problems = append(problems, Check(m, expect(t))...)
	for _, p := range problems {
		t.Error(p)
	}
}

// Faults that decoding alone must refuse, as the API server would.
func TestLoadRefusesInvalidManifests(t *testing.T) {
	cases := []struct {
		name, file, old, new, want string
	}{
		{"unknown field", "edge.yaml", "      hostNetwork: true\n", "      hostNetwork: true\n      hostNetwrok: true\n",
			`unknown field "spec.template.spec.hostNetwrok"`},
		{"field in the wrong case", "edge.yaml", "      hostNetwork: true\n", "      hostnetwork: true\n",
			`unknown field "spec.template.spec.hostnetwork"`},
		{"misspelt kind", "edge.yaml", "kind: DaemonSet", "kind: Daemonset", `no kind "Daemonset" is registered`},
		{"retired version", "origin.yaml", "apiVersion: apps/v1\nkind: Deployment", "apiVersion: apps/v1beta2\nkind: Deployment",
			`no kind "Deployment" is registered for version "apps/v1beta2"`},
		{"wrong type", "origin.yaml", "  replicas: 1\n", "  replicas: \"1\"\n", "spec.replicas of type int32"},
		{"duplicate key", "origin.yaml", "  replicas: 1\n", "  replicas: 1\n  replicas: 2\n", `"replicas" already set`},
		{"kind without checks", "namespace.yaml", "kind: Namespace", "kind: Secret", "is not a kind these checks know"},
		{"ServiceMonitor field", "monitoring/servicemonitor.yaml", "      interval: 15s", "      intervall: 15s",
			`unknown field "spec.endpoints[0].intervall"`},
		{"kustomization field", "kustomization.yaml", "resources:", "resource:", `unknown field "resource"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := Load(copyManifests(t, tc.file, tc.old, tc.new))
			wantProblem(t, problems, tc.want)
		})
	}
}
