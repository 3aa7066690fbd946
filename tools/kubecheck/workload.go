package kubecheck

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
