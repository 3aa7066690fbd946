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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// repoRoot is the server's repository, which holds this module in tools/.
func repoRoot(t *testing.T) string {
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

var built struct {
	once sync.Once
	path string
	err  error
}

// server builds cmd/srtwhep once, so that every config is judged by the
// loader the pods will run.
func server(t *testing.T) Server {
	t.Helper()
	root := repoRoot(t)
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
	root := repoRoot(t)
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

func TestManifestsDecodeStrictly(t *testing.T) {
	m, problems := Load(filepath.Join(repoRoot(t), manifestDir))
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
	m, problems := Load(filepath.Join(repoRoot(t), manifestDir))
	problems = append(problems, Check(m, expect(t))...)
	for _, p := range problems {
		t.Error(p)
	}
}

// copyManifests copies the manifest directory into a temporary one with
// old replaced by new, once, in file; a pattern that no longer occurs
// exactly once means the test case needs updating.
func copyManifests(t *testing.T, file, old, new string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), manifestDir)
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

// Faults that decode fine but break the deployment.
func TestCheckFindsFaults(t *testing.T) {
	e := expect(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"service selects nothing", "edge.yaml",
			"  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: edge\n  ports:",
			"  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: edges\n  ports:",
			"Service/srtwhep-edge: selector map[app.kubernetes.io/component:edges app.kubernetes.io/name:srtwhep] matches the pods of no workload"},
		{"service targets a missing port", "origin.yaml", "      targetPort: srt\n      protocol: UDP\n    - name: http",
			"      targetPort: srtt\n      protocol: UDP\n    - name: http", "port srt targets srtt/UDP"},
		{"service renumbers a port", "origin.yaml", "    - name: metrics\n      port: 9998", "    - name: metrics\n      port: 9999",
			"port metrics is 9999 but reaches container port 9998"},
		{"container port the config does not open", "origin.yaml", "containerPort: 9998", "containerPort: 9999",
			"declares port 9999/tcp, which no listening key of its config opens"},
		{"config moves a port", "origin.yaml", `      listen: ":9998"`, `      listen: ":9996"`,
			"does not declare 9996/tcp, which metrics.listen opens"},
		{"config binds a port to loopback", "origin.yaml", "    logFormat: json\n    metrics:",
			"    logFormat: json\n    srt:\n      listen: \"127.0.0.1:8890\"\n    metrics:", "srt.listen binds it to 127.0.0.1"},
		{"unknown config key", "edge.yaml", "    logFormat: json", "    logFormatt: json", "srtwhep -check refuses it"},
		{"service links", "origin.yaml", "      enableServiceLinks: false\n", "", "SRTWHEP_EDGE_SERVICE_HOST: unknown variable"},
		{"GOMEMLIMIT from the request", "edge.yaml", "resource: limits.memory", "resource: requests.memory",
			"env GOMEMLIMIT must come from resourceFieldRef limits.memory"},
		{"no memory limit", "origin.yaml", "            limits:\n              cpu: \"1\"\n              memory: 1Gi\n",
			"            limits:\n              cpu: \"1\"\n", "has no memory limit"},
		{"half a core", "edge.yaml", "            requests:\n              cpu: \"1\"", "            requests:\n              cpu: 500m", "requests cpu 500m"},
		{"not on the node's network", "edge.yaml", "      hostNetwork: true", "      hostNetwork: false", "hostNetwork must be true"},
		{"node's DNS", "edge.yaml", "      dnsPolicy: ClusterFirstWithHostNet\n", "", "dnsPolicy is \"\""},
		{"any node", "edge.yaml", `        srtwhep.io/media: "true"`, `        srtwhep.io/media: "yes"`, "nodeSelector must be srtwhep.io/media"},
		{"probe path the server lacks", "origin.yaml", "              path: /readyz", "              path: /ready",
			`probes "/ready", which the server does not serve`},
		{"liveness on readyz", "edge.yaml", "              path: /healthz", "              path: /readyz", `livenessProbe probes "/readyz"; want /healthz`},
		{"probe on the metrics port", "edge.yaml", "              path: /healthz\n              port: http", "              path: /healthz\n              port: metrics",
			"livenessProbe port metrics is not the port http.listen opens"},
		{"source names no Service", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-orign:8890", "no Service is called srtwhep-orign"},
		{"source on the HTTP port", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-origin:8889", "Service srtwhep-origin has no UDP port 8889"},
		{"source on an edge", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-edge:8890", "Service srtwhep-edge has no UDP port 8890"},
		{"another image", "edge.yaml", "image: srtwhep:local", "image: srtwhep:latest", "no container runs srtwhep:local"},
		{"kustomization forgets a file", "kustomization.yaml", "  - edge.yaml\n", "", "resources lacks edge.yaml"},
		{"kustomization retags", "kustomization.yaml", "    newTag: local", "    newTag: v9", "images turns srtwhep into another image"},
		{"ServiceMonitor port", "monitoring/servicemonitor.yaml", "    - port: metrics", "    - port: metric",
			`scrapes port "metric", which Service srtwhep-origin lacks`},
		{"ServiceMonitor interval", "monitoring/servicemonitor.yaml", "      interval: 15s", "      interval: 15 s", `interval "15 s" is not a Prometheus duration`},
		{"one publicURL for all edges", "edge.yaml", `value: "http://$(HOST_IP):8889"`, `value: "http://live.example.org:8889"`,
			"each edge needs its own"},
		{"fixed public IP", "edge.yaml", `value: "$(HOST_IP)"`, `value: "198.51.100.1"`, "webrtc.publicIPs is [198.51.100.1]; want the node's address"},
		{"node label from the downward API", "edge.yaml", "fieldPath: status.hostIP", "fieldPath: spec.nodeLabels",
			`fieldRef "spec.nodeLabels" is not a field the downward API gives`},
		{"two origins", "origin.yaml", "  replicas: 1\n", "  replicas: 2\n", "replicas must be 1"},
		{"rolling origin", "origin.yaml", "    type: Recreate", "    type: RollingUpdate", "want Recreate"},
		{"config not mounted", "origin.yaml", "              mountPath: /etc/srtwhep\n", "              mountPath: /etc/srtwhep/conf\n",
			"no volume is mounted where -config /etc/srtwhep/srtwhep.yml points"},
		{"ConfigMap missing", "edge.yaml", "            name: srtwhep-edge-config", "            name: srtwhep-edge-conf",
			"ConfigMap srtwhep-edge-conf (mounted for -config /etc/srtwhep/srtwhep.yml) is not among the manifests"},
		{"other namespace", "edge.yaml", "  name: srtwhep\n  namespace: srtwhep\n", "  name: srtwhep\n  namespace: default\n",
			`Ingress/srtwhep: namespace is "default"`},
		{"ingress port", "edge.yaml", "                  name: http", "                  name: web", `backend srtwhep-edge has no port "web"`},
		{"PDB both ways", "edge.yaml", "  minAvailable: 1\n", "  minAvailable: 1\n  maxUnavailable: 1\n",
			"set exactly one of minAvailable and maxUnavailable"},
		{"PDB maxUnavailable on a DaemonSet", "edge.yaml", "  minAvailable: 1\n", "  maxUnavailable: 1\n",
			"only an integer minAvailable works"},
		{"PDB percentage on a DaemonSet", "edge.yaml", "  minAvailable: 1\n", "  minAvailable: 50%\n",
			"only an integer minAvailable works"},
		// The old defaults, each refused (the hostile-internet issue).
		{"old default: no publish credentials", "origin.yaml", publishEnv, "", "pathDefaults.publishUser is empty: anyone who reaches the publish Service may publish"},
		{"publish password in the manifest", "origin.yaml", "            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-pass\n",
			"            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              value: 0123456789abcdef0123456789\n",
			"SRTWHEP_PATHDEFAULTS_PUBLISHPASS with valueFrom.secretKeyRef"},
		{"optional Secret", "origin.yaml", "                  key: publish-pass\n", "                  key: publish-pass\n                  optional: true\n",
			"env SRTWHEP_PATHDEFAULTS_PUBLISHPASS is an optional secretKeyRef"},
		{"old default: edge metrics on every node address", "edge.yaml", `      listen: "127.0.0.1:9998"`, `      listen: ":9998"`,
			`metrics.listen ":9998" is on the node's network`},
		{"old default: all of RFC 1918 trusted", "edge.yaml", "trustedProxies: [10.244.0.0/16]", "trustedProxies: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16]",
			"http.trustedProxies[0] 10.0.0.0/8 trusts a whole private range"},
		{"metrics on the publish Service", "origin.yaml", publishPorts, publishPorts + "    - name: metrics\n      port: 9998\n      targetPort: metrics\n      protocol: TCP\n",
			"port metrics exposes the metrics of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, problems := Load(copyManifests(t, tc.file, tc.old, tc.new))
			if len(problems) > 0 {
				t.Fatalf("the case must decode, to reach the checks: %v", problems)
			}
			wantProblem(t, Check(m, e), tc.want)
		})
	}
}

// publishEnv is the origin's publish credentials from the Secret.
const publishEnv = "            - name: SRTWHEP_PATHDEFAULTS_PUBLISHUSER\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-user\n" +
	"            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-pass\n"

// publishPorts opens the port list of the origin's internet-facing Service.
const publishPorts = "  externalTrafficPolicy: Local\n  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: origin\n  ports:\n"

func TestRoutesAreTheServers(t *testing.T) {
	routes, err := Routes(filepath.Join(repoRoot(t), "pkg", "web"))
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

// The kubelet's rules that the checks reproduce.
func TestKubeletEnv(t *testing.T) {
	ct := &corev1.Container{
		Name: "srtwhep",
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1500m")},
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")},
		},
		Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "B", Value: "x$(A)y$$(A)$(UNDEFINED)$(C)"},
			{Name: "C", Value: "late"},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
			{Name: "MEMMI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
	}
	svc := &corev1.Service{}
	svc.Name, svc.Namespace = "srtwhep-origin", "ns"
	svc.Spec.Ports = []corev1.ServicePort{{Name: "srt", Port: 8890, Protocol: corev1.ProtocolUDP}}
	links := true
	pod := Pod{Name: "p", Namespace: "ns", Spec: &corev1.PodSpec{EnableServiceLinks: &links}, Node: Nodes[1]}
	env, err := pod.Env(ct, []*corev1.Service{svc})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"A":                                 "203.0.113.11",
		"B":                                 "x203.0.113.11y$(A)$(UNDEFINED)$(C)",
		"MEM":                               "1073741824",
		"MEMMI":                             "954", // 10^9 / 2^20, rounded up
		"CPU":                               "2",   // 1.5 cores, rounded up
		"POD":                               podIP,
		"SRTWHEP_ORIGIN_SERVICE_HOST":       "10.96.0.17",
		"SRTWHEP_ORIGIN_PORT_8890_UDP_PORT": "8890",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q; want %q", k, env[k], v)
		}
	}
	links = false
	pod.Spec.HostNetwork = true
	env, err = pod.Env(ct, []*corev1.Service{svc})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env["SRTWHEP_ORIGIN_SERVICE_HOST"]; ok {
		t.Error("service links set with enableServiceLinks: false")
	}
	if env["POD"] != Nodes[1].IP {
		t.Errorf("with hostNetwork, status.podIP = %q; want the node's %s", env["POD"], Nodes[1].IP)
	}
}
