package kubecheck

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/srtwhep/srtwhep/tools/deploycheck"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// workload checks one Deployment or DaemonSet and its srtwhep container,
// whose config it loads with the server's own loader on each node.
func (c *checker) workload(w *workload) {
	o := w.obj
	sel, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil || w.selector == nil || sel.Empty() {
		c.addf(o, "selector is empty or invalid (%v)", err)
	} else if !sel.Matches(labels.Set(w.template.Labels)) {
		c.addf(o, "selector %s does not match its own pod labels %v", sel, w.template.Labels)
	}
	w.role = w.template.Labels[ComponentLabel]
	if _, ok := listenersOf[w.role]; !ok {
		c.addf(o, "pod label %s is %q; want %s or %s", ComponentLabel, w.role, RoleOrigin, RoleEdge)
	}
	spec := &w.template.Spec
	for i := range spec.Containers {
		if spec.Containers[i].Image == c.e.Image {
			w.server = &spec.Containers[i]
			break
		}
	}
	if w.server == nil {
		c.addf(o, "no container runs %s, the image docker-compose.yml builds", c.e.Image)
		return
	}
	ct := w.server
	if len(ct.Command) > 0 {
		c.addf(o, "container %s sets command; leave the image's entrypoint and pass flags in args", ct.Name)
	}
	if q, ok := ct.Resources.Requests[corev1.ResourceCPU]; !ok || q.Cmp(wholeCPU) != 0 {
		c.addf(o, "container %s requests cpu %v; want 1: the capacity figures are per core", ct.Name, ct.Resources.Requests.Cpu())
	}
	if _, ok := ct.Resources.Limits[corev1.ResourceMemory]; !ok {
		c.addf(o, "container %s has no memory limit for GOMEMLIMIT to follow", ct.Name)
	}
	if !goMemLimitFollowsLimit(ct) {
		c.addf(o, "container %s: env %s must come from resourceFieldRef limits.memory of this container (divisor 1)", ct.Name, goMemLimit)
	}
	c.probe(w, ct.ReadinessProbe, "readinessProbe", readyPath)
	c.probe(w, ct.LivenessProbe, "livenessProbe", alivePath)
	for _, e := range ct.Env {
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Optional != nil && *r.SecretKeyRef.Optional {
			c.addf(o, "container %s: env %s is an optional secretKeyRef: without Secret %s the pod would start without it; drop optional", ct.Name, e.Name, r.SecretKeyRef.Name)
		}
	}

	name, data, ok := c.mountedConfig(w)
	if !ok {
		return
	}
	for i, n := range Nodes {
		pod := Pod{Name: w.meta.Name + "-x7k2p", Namespace: w.meta.Namespace, Spec: spec, Labels: w.template.Labels, Annotations: w.template.Annotations, Node: n}
		env, err := pod.Env(ct, c.services)
		if err != nil {
			c.addf(o, "%v", err)
			return
		}
		cfg, err := c.e.Server.Effective(name, data, env)
		if err != nil {
			c.addf(o, "on node %s: %v", n.Name, err)
			return
		}
		w.config[i] = cfg
	}
	c.ports(w)
	c.trustedProxies(w)
}

// trustedProxies: every entry names a proxy or a pod network, not a
// whole private range, whose every pod and host could then pass for any
// viewer.
func (c *checker) trustedProxies(w *workload) {
	v, _ := w.config[0].Value("http.trustedProxies")
	list, _ := v.([]any)
	for i, it := range list {
		s := fmt.Sprint(it)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue // a single address, which the server checked
		}
		min := minProxyBits4
		if !p.Addr().Is4() {
			min = minProxyBits6
		}
		if p.Bits() < min {
			c.addf(w.obj, "http.trustedProxies[%d] %s trusts a whole private range, so any pod or host in it could pass for any viewer; name the ingress controller's pod network (/%d or narrower, e.g. 10.244.0.0/16) or its addresses", i, s, min)
		}
	}
}

// origin: its paths are published to from the internet, with credentials
// from a Secret.
func (c *checker) originCredentials(w *workload) {
	if w.config[0] == nil {
		return
	}
	user, _ := w.config[0].Value("pathDefaults.publishUser")
	pass, _ := w.config[0].Value("pathDefaults.publishPass")
	if u, _ := user.(string); u == "" {
		c.addf(w.obj, "pathDefaults.publishUser is empty: anyone who reaches the publish Service may publish; set %s and %s from a Secret (secretKeyRef)", envPublishUser, envPublishPass)
		return
	}
	if p, _ := pass.(string); p == "" {
		c.addf(w.obj, "pathDefaults.publishPass is empty; set %s from a Secret (secretKeyRef)", envPublishPass)
		return
	}
	for _, name := range []string{envPublishUser, envPublishPass} {
		fromSecret := false
		for _, e := range w.server.Env {
			if e.Name == name {
				fromSecret = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
			}
		}
		if !fromSecret {
			c.addf(w.obj, "container %s: the publish credentials must come from a Secret: set %s with valueFrom.secretKeyRef, not in the ConfigMap or a literal value", w.server.Name, name)
		}
	}
}

func goMemLimitFollowsLimit(ct *corev1.Container) bool {
	for _, e := range ct.Env {
		if e.Name != goMemLimit {
			continue
		}
		r := e.ValueFrom
		if r == nil || r.ResourceFieldRef == nil {
			return false
		}
		ref := r.ResourceFieldRef
		one := resource.MustParse("1")
		return ref.Resource == "limits.memory" && (ref.ContainerName == "" || ref.ContainerName == ct.Name) &&
			(ref.Divisor.IsZero() || ref.Divisor.Cmp(one) == 0)
	}
	return false
}

// probe: an HTTP GET of a path the server serves, on the container port
// that http.listen opens (checked in ports, once the config is known).
func (c *checker) probe(w *workload, p *corev1.Probe, field, want string) {
	o := w.obj
	if p == nil || p.HTTPGet == nil {
		c.addf(o, "container %s: %s must be an httpGet of %s", w.server.Name, field, want)
		return
	}
	if p.HTTPGet.Path != want {
		c.addf(o, "container %s: %s probes %q; want %s", w.server.Name, field, p.HTTPGet.Path, want)
	}
	if !slices.Contains(c.e.Routes, p.HTTPGet.Path) {
		c.addf(o, "container %s: %s probes %q, which the server does not serve (it serves GET %v)", w.server.Name, field, p.HTTPGet.Path, c.e.Routes)
	}
}

// mountedConfig follows -config PATH through the container's volume
// mounts to the ConfigMap key that holds it.
func (c *checker) mountedConfig(w *workload) (name string, data []byte, ok bool) {
	o, ct := w.obj, w.server
	file := ""
	for i, a := range ct.Args {
		if v, ok := strings.CutPrefix(a, "-config="); ok {
			file = v
		} else if a == "-config" && i+1 < len(ct.Args) {
			file = ct.Args[i+1]
		}
	}
	if file == "" {
		c.addf(o, "container %s: args lack -config FILE", ct.Name)
		return "", nil, false
	}
	var mount *corev1.VolumeMount
	key := path.Base(file)
	for i, m := range ct.VolumeMounts {
		if m.SubPath == "" && m.MountPath == path.Dir(file) || m.SubPath != "" && m.MountPath == file {
			mount = &ct.VolumeMounts[i]
			if m.SubPath != "" {
				key = m.SubPath
			}
		}
	}
	if mount == nil {
		c.addf(o, "container %s: no volume is mounted where -config %s points", ct.Name, file)
		return "", nil, false
	}
	var cmName string
	for _, v := range w.template.Spec.Volumes {
		if v.Name != mount.Name {
			continue
		}
		if v.ConfigMap == nil {
			c.addf(o, "volume %s (where -config %s points) is not a ConfigMap", v.Name, file)
			return "", nil, false
		}
		cmName = v.ConfigMap.Name
		for _, it := range v.ConfigMap.Items {
			if it.Path == key {
				key = it.Key
			}
		}
	}
	if cmName == "" {
		c.addf(o, "container %s mounts volume %q, which the pod does not define", ct.Name, mount.Name)
		return "", nil, false
	}
	for _, cm := range all[*corev1.ConfigMap](c.m) {
		if cm.Name != cmName || cm.Namespace != w.meta.Namespace {
			continue
		}
		d, ok := cm.Data[key]
		if !ok {
			c.addf(o, "ConfigMap %s has no key %q for -config %s", cmName, key, file)
			return "", nil, false
		}
		return fmt.Sprintf("%s: ConfigMap/%s key %s", c.m.objectOf(cm).File, cmName, key), []byte(d), true
	}
	c.addf(o, "ConfigMap %s (mounted for -config %s) is not among the manifests", cmName, file)
	return "", nil, false
}

// ports: the container ports are exactly what the config opens for the
// pod's role, on addresses others can reach, and the probes hit HTTP.
func (c *checker) ports(w *workload) {
	o, ct, cfg := w.obj, w.server, w.config[0]
	ls, err := cfg.Listeners()
	if err != nil {
		c.addf(o, "%v", err)
		return
	}
	declared := map[deploycheck.Port]corev1.ContainerPort{}
	for _, p := range ct.Ports {
		port := portOf(p)
		declared[port] = p
		var key string
		for k, l := range ls {
			if l.Port == port {
				key = k
			}
		}
		switch {
		case key == "":
			c.addf(o, "container %s declares port %s, which no listening key of its config opens (%s)", ct.Name, port, describe(ls))
		case ls[key].Loopback():
			c.addf(o, "container %s declares port %s, but %s binds it to %s: nothing outside the pod reaches it", ct.Name, port, key, ls[key].Host)
		case w.template.Spec.HostNetwork && p.HostPort != 0 && p.HostPort != p.ContainerPort:
			c.addf(o, "container %s: hostPort %d differs from containerPort %d on the node's network", ct.Name, p.HostPort, p.ContainerPort)
		}
	}
	if w.template.Spec.HostNetwork && !ls["metrics.listen"].Loopback() {
		c.addf(o, "metrics.listen %q is on the node's network (hostNetwork): it serves the metrics on every address of the node, its public one included; bind 127.0.0.1", ls["metrics.listen"].Host+":"+strconv.Itoa(int(ls["metrics.listen"].Number)))
	}
	for _, key := range listenersOf[w.role] {
		l := ls[key]
		if _, ok := declared[l.Port]; !ok {
			c.addf(o, "container %s does not declare %s, which %s opens (%s pods must expose %v)", ct.Name, l.Port, key, w.role, listenersOf[w.role])
		} else if l.Loopback() {
			c.addf(o, "%s is bound to %s; a %s must expose it", key, l.Host, w.role)
		}
	}
	for field, p := range map[string]*corev1.Probe{"readinessProbe": ct.ReadinessProbe, "livenessProbe": ct.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		got, ok := containerPort(ct, p.HTTPGet.Port, corev1.ProtocolTCP)
		if !ok || got.ContainerPort != int32(ls["http.listen"].Number) {
			c.addf(o, "container %s: %s port %s is not the port http.listen opens (%s)", ct.Name, field, p.HTTPGet.Port.String(), ls["http.listen"].Port)
		}
	}
}

func portOf(p corev1.ContainerPort) deploycheck.Port {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return deploycheck.Port{Number: uint32(p.ContainerPort), Proto: strings.ToLower(string(proto))}
}

func describe(ls map[string]deploycheck.Listener) string {
	var parts []string
	for k, l := range ls {
		parts = append(parts, k+" "+l.Port.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// containerPort resolves a port reference (a name, or a number) of a
// Service, probe or Ingress to the container's port.
func containerPort(ct *corev1.Container, ref intstr.IntOrString, proto corev1.Protocol) (corev1.ContainerPort, bool) {
	for _, p := range ct.Ports {
		pp := p.Protocol
		if pp == "" {
			pp = corev1.ProtocolTCP
		}
		if pp != proto {
			continue
		}
		if ref.Type == intstr.String && p.Name == ref.StrVal || ref.Type == intstr.Int && p.ContainerPort == ref.IntVal {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// roles: one origin Deployment, edges as a hostNetwork DaemonSet on media
// nodes that pull from the origin's Service and speak for their own node.
func (c *checker) roles() {
	var origins, edges []*workload
	for _, w := range c.workloads {
		switch w.role {
		case RoleOrigin:
			origins = append(origins, w)
		case RoleEdge:
			edges = append(edges, w)
		}
	}
	if len(origins) != 1 {
		c.problems = append(c.problems, fmt.Sprintf("%d origin workloads; want exactly one, which every publisher and edge meets", len(origins)))
	}
	if len(edges) == 0 {
		c.problems = append(c.problems, "no edge workload")
	}
	for _, w := range origins {
		d, ok := w.obj.Obj.(*appsv1.Deployment)
		if !ok {
			c.addf(w.obj, "the origin must be a Deployment")
			continue
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			c.addf(w.obj, "replicas must be 1: publishers and edges must all meet at the same origin")
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			c.addf(w.obj, "strategy is %q; want Recreate, so that two origins never run at once", d.Spec.Strategy.Type)
		}
		if w.server != nil {
			c.originCredentials(w)
		}
	}
	for _, w := range edges {
		c.edge(w, origins)
	}
}

func (c *checker) edge(w *workload, origins []*workload) {
	o, spec := w.obj, &w.template.Spec
	if _, ok := o.Obj.(*appsv1.DaemonSet); !ok {
		c.addf(o, "edges must be a DaemonSet: one per media node")
	}
	if !spec.HostNetwork {
		c.addf(o, "hostNetwork must be true: browsers reach the edge's ICE port at the node's address")
	}
	if spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		c.addf(o, "dnsPolicy is %q; with hostNetwork it must be ClusterFirstWithHostNet, or the origin's Service name does not resolve", spec.DNSPolicy)
	}
	if spec.NodeSelector[MediaLabel] != "true" {
		c.addf(o, "nodeSelector must be %s: \"true\" (the nodes README.md says to label)", MediaLabel)
	}
	if w.config[0] == nil || w.config[1] == nil {
		return
	}
	for i, n := range Nodes {
		cfg := w.config[i]
		ips, _ := cfg.Value("webrtc.publicIPs")
		if list, _ := ips.([]any); len(list) != 1 || fmt.Sprint(list[0]) != n.IP {
			c.addf(o, "on node %s (%s), webrtc.publicIPs is %v; want the node's address, from %s with the downward API", n.Name, n.IP, ips, envPublicIPs)
		}
	}
	u0, _ := w.config[0].Value("http.publicURL")
	u1, _ := w.config[1].Value("http.publicURL")
	if s, _ := u0.(string); s == "" || fmt.Sprint(u0) == fmt.Sprint(u1) {
		c.addf(o, "http.publicURL is %q on %s and %q on %s; each edge needs its own (%s from the downward API), or PATCH and DELETE reach the wrong edge", u0, Nodes[0].Name, u1, Nodes[1].Name, envPublicURL)
	}
	src, _ := w.config[0].Value("pathDefaults.source")
	c.source(w, fmt.Sprint(src), origins)
}

// source: the edge pulls srt://SERVICE:PORT where SERVICE selects the
// origin and PORT reaches its SRT listener over UDP.
func (c *checker) source(w *workload, src string, origins []*workload) {
	o := w.obj
	u, err := url.Parse(src)
	if err != nil || u.Scheme != "srt" || u.Port() == "" {
		c.addf(o, "pathDefaults.source is %q; want srt://ORIGIN-SERVICE:PORT", src)
		return
	}
	host, port := u.Hostname(), u.Port()
	for _, s := range c.services {
		if !slices.Contains(serviceNames(s), host) {
			continue
		}
		var sp *corev1.ServicePort
		for i := range s.Spec.Ports {
			if strconv.Itoa(int(s.Spec.Ports[i].Port)) == port {
				sp = &s.Spec.Ports[i]
			}
		}
		if sp == nil || sp.Protocol != corev1.ProtocolUDP {
			c.addf(o, "pathDefaults.source %s: Service %s has no UDP port %s", src, s.Name, port)
			return
		}
		for _, origin := range origins {
			if !selects(s, origin) {
				continue
			}
			if origin.config[0] == nil {
				return // the origin's own problem is reported already
			}
			ls, err := origin.config[0].Listeners()
			if err != nil {
				return
			}
			cp, ok := containerPort(origin.server, targetPort(sp), corev1.ProtocolUDP)
			if !ok || uint32(cp.ContainerPort) != ls["srt.listen"].Number {
				c.addf(o, "pathDefaults.source %s: port %s of Service %s does not reach the origin's srt.listen (%s)", src, port, s.Name, ls["srt.listen"].Port)
			}
			return
		}
		c.addf(o, "pathDefaults.source %s: Service %s does not select the origin", src, s.Name)
		return
	}
	c.addf(o, "pathDefaults.source %s: no Service is called %s", src, host)
}

// serviceNames are the DNS names a pod of the same namespace can use.
func serviceNames(s *corev1.Service) []string {
	n := s.Name + "." + s.Namespace
	return []string{s.Name, n, n + ".svc", n + ".svc.cluster.local"}
}

func selects(s *corev1.Service, w *workload) bool {
	return len(s.Spec.Selector) > 0 && s.Namespace == w.meta.Namespace &&
		labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(w.template.Labels))
}

func targetPort(sp *corev1.ServicePort) intstr.IntOrString {
	if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal == 0 {
		return intstr.FromInt32(sp.Port)
	}
	return sp.TargetPort
}

// service: it selects a workload, and each port reaches one of that
// workload's container ports with the same number and protocol.
func (c *checker) service(s *corev1.Service) {
	o := c.m.objectOf(s)
	var matched []*workload
	for _, w := range c.workloads {
		if selects(s, w) {
			matched = append(matched, w)
		}
	}
	if len(matched) == 0 {
		c.addf(o, "selector %v matches the pods of no workload", s.Spec.Selector)
		return
	}
	for _, sp := range s.Spec.Ports {
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		for _, w := range matched {
			if w.server == nil {
				continue
			}
			tp := targetPort(&sp)
			cp, ok := containerPort(w.server, tp, proto)
			switch {
			case !ok:
				c.addf(o, "port %s targets %s/%s, which %s does not declare", sp.Name, tp.String(), proto, w.obj)
			case cp.ContainerPort != sp.Port:
				c.addf(o, "port %s is %d but reaches container port %d of %s; keep the numbers equal (srt://%s:%d, the contract's ports)", sp.Name, sp.Port, cp.ContainerPort, w.obj, s.Name, cp.ContainerPort)
			}
			if ok && w.config[0] != nil && (s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort) {
				if ls, err := w.config[0].Listeners(); err == nil && uint32(cp.ContainerPort) == ls["metrics.listen"].Number && proto == corev1.ProtocolTCP {
					c.addf(o, "port %s exposes the metrics of %s outside the cluster (type %s); keep them on a ClusterIP Service", sp.Name, w.obj, s.Spec.Type)
				}
			}
		}
	}
}

// ingress: every backend is a Service port here, speaking TCP.
func (c *checker) ingress(in *networkingv1.Ingress) {
	o := c.m.objectOf(in)
	var backends []*networkingv1.IngressServiceBackend
	if in.Spec.DefaultBackend != nil && in.Spec.DefaultBackend.Service != nil {
		backends = append(backends, in.Spec.DefaultBackend.Service)
	}
	for _, r := range in.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service == nil {
				c.addf(o, "path %s has no Service backend", p.Path)
				continue
			}
			backends = append(backends, p.Backend.Service)
		}
	}
	if len(backends) == 0 {
		c.addf(o, "routes to nothing")
	}
	for _, b := range backends {
		c.ingressBackend(o, in.Namespace, b)
	}
}

func (c *checker) ingressBackend(o *Object, ns string, b *networkingv1.IngressServiceBackend) {
	for _, s := range c.services {
		if s.Name != b.Name || s.Namespace != ns {
			continue
		}
		for _, sp := range s.Spec.Ports {
			if b.Port.Name != "" && sp.Name == b.Port.Name || b.Port.Name == "" && sp.Port == b.Port.Number {
				if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
					c.addf(o, "backend %s port %s is %s; HTTP needs TCP", b.Name, sp.Name, sp.Protocol)
				}
				return
			}
		}
		c.addf(o, "backend %s has no port %q/%d", b.Name, b.Port.Name, b.Port.Number)
		return
	}
	c.addf(o, "backend Service %s is not among the manifests", b.Name)
}

func (c *checker) pdb(p *policyv1.PodDisruptionBudget) {
	o := c.m.objectOf(p)
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		c.addf(o, "set exactly one of minAvailable and maxUnavailable")
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil || p.Spec.Selector == nil || sel.Empty() {
		c.addf(o, "selector is empty or invalid (%v)", err)
		return
	}
	matched := false
	for _, w := range c.workloads {
		if w.meta.Namespace != p.Namespace || !sel.Matches(labels.Set(w.template.Labels)) {
			continue
		}
		matched = true
		// The disruption controller finds the expected pod count only
		// through a controller with a scale; for others (a DaemonSet) it
		// allows no eviction at all unless the budget is an integer
		// minAvailable.
		if _, ok := w.obj.Obj.(*appsv1.DaemonSet); ok &&
			(p.Spec.MaxUnavailable != nil || p.Spec.MinAvailable != nil && p.Spec.MinAvailable.Type != intstr.Int) {
			c.addf(o, "covers the pods of %s, for which only an integer minAvailable works (maxUnavailable and percentages need a controller with a scale); otherwise no eviction is ever allowed", w.obj)
		}
	}
	if !matched {
		c.addf(o, "selector %s matches the pods of no workload", sel)
	}
}

// serviceMonitor: the Prometheus operator finds Services here that all
// have the scraped port, and scrapes the server's metrics path.
func (c *checker) serviceMonitor(sm *ServiceMonitor) {
	o := c.m.objectOf(sm)
	spec := &sm.Spec
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil || spec.Selector == nil || sel.Empty() {
		c.addf(o, "spec.selector is empty or invalid (%v)", err)
		return
	}
	namespaces := spec.NamespaceSelector.MatchNames
	if len(namespaces) == 0 && !spec.NamespaceSelector.Any {
		namespaces = []string{sm.Namespace}
	}
	var matched []*corev1.Service
	for _, s := range c.services {
		if (spec.NamespaceSelector.Any || slices.Contains(namespaces, s.Namespace)) && sel.Matches(labels.Set(s.Labels)) {
			matched = append(matched, s)
		}
	}
	if len(matched) == 0 {
		c.addf(o, "selector %s in namespaces %v matches no Service", sel, namespaces)
	}
	if len(spec.Endpoints) == 0 {
		c.addf(o, "spec.endpoints is empty")
	}
	for i, ep := range spec.Endpoints {
		if ep.Port == "" {
			c.addf(o, "endpoints[%d] names no port; name the Services' metrics port", i)
		}
		for _, s := range matched {
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				c.addf(o, "endpoints[%d] scrapes port %q, which Service %s lacks", i, ep.Port, s.Name)
			}
		}
		if ep.Path != "" && ep.Path != metricsPath {
			c.addf(o, "endpoints[%d] path is %q; the server serves %s", i, ep.Path, metricsPath)
		}
		for field, d := range map[string]string{"interval": ep.Interval, "scrapeTimeout": ep.ScrapeTimeout} {
			if d != "" && !promDuration.MatchString(d) {
				c.addf(o, "endpoints[%d] %s %q is not a Prometheus duration (15s, 1m)", i, field, d)
			}
		}
		if ep.Scheme != "" && ep.Scheme != "http" && ep.Scheme != "https" {
			c.addf(o, "endpoints[%d] scheme %q", i, ep.Scheme)
		}
	}
}
