package kubecheck

import (
	"slices"
	"strconv"
	"strings"

	"github.com/srtwhep/srtwhep/tools/deploycheck"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
