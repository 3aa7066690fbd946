package kubecheck

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
