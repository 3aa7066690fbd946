package kubecheck

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

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
