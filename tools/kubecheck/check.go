package kubecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/srtwhep/srtwhep/tools/deploycheck"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and values the manifests and these checks share.
const (
	// ComponentLabel on a pod template says what the pod is.
	ComponentLabel = "app.kubernetes.io/component"
	RoleOrigin     = "origin"
	RoleEdge       = "edge"
	// MediaLabel marks the nodes the edges run on.
	MediaLabel = "srtwhep.io/media"

	readyPath   = "/readyz"
	alivePath   = "/healthz"
	metricsPath = "/metrics"
	// goMemLimit is read by the Go runtime; it must follow the container's
	// memory limit.
	goMemLimit = "GOMEMLIMIT"
	// Per-edge overrides: each edge advertises its own node and answers
	// WHEP with a Location on itself.
	envPublicIPs = "SRTWHEP_WEBRTC_PUBLICIPS"
	envPublicURL = "SRTWHEP_HTTP_PUBLICURL"
)

// wholeCPU is the request each srtwhep container makes: the figures in
// the README's capacity planning are per core.
var wholeCPU = resource.MustParse("1")

// listenersOf says which listening keys of its config a pod of each role
// must expose as container ports: publishers and edges reach the origin's
// SRT, viewers the edges' HTTP and media ports, Prometheus both.
// The edges' metrics are not among them: on the node's network they stay
// on loopback (hostNetworkMetrics).
var listenersOf = map[string][]string{
	RoleOrigin: {"srt.listen", "http.listen", "metrics.listen"},
	RoleEdge:   {"http.listen", "webrtc.udpPort", "webrtc.tcpPort"},
}

// Secure defaults: the origin's publish Service is on the internet, so
// its paths need credentials, and those come from a Secret the pod cannot
// start without; a pod on the node's network serves metrics on loopback;
// trusted proxies are named, never whole private ranges.
const (
	envPublishUser = "SRTWHEP_PATHDEFAULTS_PUBLISHUSER"
	envPublishPass = "SRTWHEP_PATHDEFAULTS_PUBLISHPASS"
	// minProxyBits4 and minProxyBits6 are the widest trusted-proxy
	// prefixes accepted: a cluster's pod network (/16), never 10.0.0.0/8
	// or 172.16.0.0/12.
	minProxyBits4 = 16
	minProxyBits6 = 48
)

// Expect is what the manifests must agree with, from outside them.
type Expect struct {
	Namespace string   // where every object lives
	Image     string   // the image docker-compose.yml builds
	Routes    []string // GET paths of the server's HTTP listener (Routes)
	Server    Server   // the server's own config loader
}

// Check returns every way the manifests disagree with each other, with the
// server, or with e; nil means none.
func Check(m *Manifests, e Expect) []string {
	c := &checker{m: m, e: e, services: all[*corev1.Service](m)}
	c.objects()
	c.kustomization()
	for _, d := range all[*appsv1.Deployment](m) {
		c.workloads = append(c.workloads, &workload{obj: m.objectOf(d), meta: d.ObjectMeta, selector: d.Spec.Selector, template: &d.Spec.Template})
	}
	for _, d := range all[*appsv1.DaemonSet](m) {
		c.workloads = append(c.workloads, &workload{obj: m.objectOf(d), meta: d.ObjectMeta, selector: d.Spec.Selector, template: &d.Spec.Template})
	}
	for _, w := range c.workloads {
		c.workload(w)
	}
	c.roles()
	for _, s := range c.services {
		c.service(s)
	}
	for _, in := range all[*networkingv1.Ingress](m) {
		c.ingress(in)
	}
	for _, p := range all[*policyv1.PodDisruptionBudget](m) {
		c.pdb(p)
	}
	for _, sm := range all[*ServiceMonitor](m) {
		c.serviceMonitor(sm)
	}
	return c.problems
}

type checker struct {
	m         *Manifests
	e         Expect
	services  []*corev1.Service
	workloads []*workload
	problems  []string
}

// workload is a Deployment or DaemonSet and what its pods turn out to be.
type workload struct {
	obj      *Object
	meta     metav1.ObjectMeta
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
	role     string

	server *corev1.Container                     // the container running the srtwhep image
	config [len(Nodes)]*deploycheck.ServerConfig // effective config on each node; nil when refused
}

func (c *checker) addf(o *Object, format string, args ...any) {
	c.problems = append(c.problems, o.String()+": "+fmt.Sprintf(format, args...))
}

// objects: one namespace for everything, no name twice.
func (c *checker) objects() {
	seen := map[string]bool{}
	hasNS := false
	for i := range c.m.Objects {
		o := &c.m.Objects[i]
		switch o.GVK.Kind {
		case "Kustomization":
			continue
		case "Namespace":
			hasNS = hasNS || o.Name() == c.e.Namespace
		default:
			if o.Namespace() != c.e.Namespace {
				c.addf(o, "namespace is %q; want %q, so that the object also lands there with kubectl apply -f", o.Namespace(), c.e.Namespace)
			}
		}
		if o.Name() == "" {
			c.addf(o, "has no metadata.name")
		}
		key := o.GVK.Kind + "/" + o.Namespace() + "/" + o.Name()
		if seen[key] {
			c.addf(o, "is defined twice")
		}
		seen[key] = true
	}
	if !hasNS {
		c.problems = append(c.problems, fmt.Sprintf("no Namespace %q among the manifests", c.e.Namespace))
	}
}

// kustomization: `kubectl apply -k` must apply every top-level manifest
// file, in the same namespace, with the same image as docker compose.
func (c *checker) kustomization() {
	ks := all[*Kustomization](c.m)
	if len(ks) != 1 {
		c.problems = append(c.problems, fmt.Sprintf("%d kustomization files; want exactly one, kustomization.yaml at the top", len(ks)))
		return
	}
	k := ks[0]
	o := c.m.objectOf(k)
	if o.File != "kustomization.yaml" {
		c.addf(o, "want it at the top of the manifest directory")
	}
	if k.Namespace != c.e.Namespace {
		c.addf(o, "namespace is %q; want %q", k.Namespace, c.e.Namespace)
	}
	for _, r := range k.Resources {
		if !slices.Contains(c.m.Files, r) {
			c.addf(o, "resources lists %q, which is not a manifest file here", r)
		}
	}
	for _, f := range c.m.Files {
		if !strings.Contains(f, "/") && f != o.File && !slices.Contains(k.Resources, f) {
			c.addf(o, "resources lacks %s; kubectl apply -k would leave it out", f)
		}
	}
	repo, tag, _ := strings.Cut(c.e.Image, ":")
	for _, img := range k.Images {
		switch {
		case img.Name != repo:
			c.addf(o, "images rewrites %q, which no container runs (they run %s)", img.Name, c.e.Image)
		case img.NewName != "" && img.NewName != repo, img.NewTag != "" && img.NewTag != tag, img.Digest != "":
			c.addf(o, "images turns %s into another image than docker-compose.yml's %s; set your registry at deploy time: kustomize edit set image %s=REGISTRY/srtwhep:TAG", img.Name, c.e.Image, repo)
		}
	}
}
