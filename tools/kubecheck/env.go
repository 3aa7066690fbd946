package kubecheck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Node is what the downward API tells a pod about the node it runs on.
type Node struct {
	Name string
	IP   string // status.hostIP
}

// Nodes are two made-up media nodes: values a container takes from the
// node must differ between them, and values it must share must not.
var Nodes = [2]Node{{"media-1", "203.0.113.10"}, {"media-2", "203.0.113.11"}}

// podIP is what a pod that does not use the node's network is given.
const podIP = "10.244.1.7"

// Pod is one pod of a workload, on one node.
type Pod struct {
	Name, Namespace string
	Spec            *corev1.PodSpec
	Labels          map[string]string
	Annotations     map[string]string
	Node            Node
}

// Env returns the environment Kubernetes gives container c: the service
// links (one set of variables per Service of the namespace, unless the pod
// turns them off), then env with the downward API resolved for the pod's
// node and $(VAR) references expanded, as the kubelet does.
func (p Pod) Env(c *corev1.Container, services []*corev1.Service) (map[string]string, error) {
	env := map[string]string{}
	if p.Spec.EnableServiceLinks == nil || *p.Spec.EnableServiceLinks {
		for _, s := range services {
			if s.Namespace == p.Namespace {
				serviceLinks(env, s)
			}
		}
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not followed by these checks; list the variables under env", c.Name)
	}
	for _, e := range c.Env {
		v := expand(e.Value, env)
		if e.ValueFrom != nil {
			var err error
			if v, err = p.valueFrom(c, e.ValueFrom); err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
		}
		env[e.Name] = v
	}
	return env, nil
}

// serviceLinks adds the Docker-link-style variables the kubelet sets for
// a Service: srtwhep-origin → SRTWHEP_ORIGIN_SERVICE_HOST and the like.
func serviceLinks(env map[string]string, s *corev1.Service) {
	if s.Spec.ClusterIP == corev1.ClusterIPNone {
		return
	}
	name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	if ip == "" {
		ip = "10.96.0.17"
	}
	env[name+"_SERVICE_HOST"] = ip
	for i, port := range s.Spec.Ports {
		proto := string(port.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		n := strconv.Itoa(int(port.Port))
		if i == 0 {
			env[name+"_SERVICE_PORT"] = n
			env[name+"_PORT"] = strings.ToLower(proto) + "://" + ip + ":" + n
		}
		if port.Name != "" {
			env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(port.Name, "-", "_"))] = n
		}
		prefix := name + "_PORT_" + n + "_" + proto
		env[prefix] = strings.ToLower(proto) + "://" + ip + ":" + n
		env[prefix+"_PROTO"] = strings.ToLower(proto)
		env[prefix+"_PORT"] = n
		env[prefix+"_ADDR"] = ip
	}
}

// varRef is a $(NAME) reference; $$ escapes a dollar.
var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand replaces $(NAME) with the value of a variable defined before it;
// a reference to an undefined one stays as it is, as in Kubernetes.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

var (
	fieldLabel      = regexp.MustCompile(`^metadata\.labels\['([^']+)'\]$`)
	fieldAnnotation = regexp.MustCompile(`^metadata\.annotations\['([^']+)'\]$`)
)

func (p Pod) valueFrom(c *corev1.Container, src *corev1.EnvVarSource) (string, error) {
	switch {
	case src.FieldRef != nil:
		return p.field(src.FieldRef.FieldPath)
	case src.ResourceFieldRef != nil:
		return resourceValue(c, src.ResourceFieldRef)
	case src.SecretKeyRef != nil:
		return secretValue(src.SecretKeyRef), nil
	default:
		return "", fmt.Errorf("only fieldRef, resourceFieldRef and secretKeyRef are followed by these checks")
	}
}

// secretValue stands for a Secret's value the checks cannot see: long
// enough for any token rule, and only characters every field takes.
func secretValue(ref *corev1.SecretKeySelector) string {
	v := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return 'x'
	}, strings.ToLower("secret"+ref.Name+ref.Key))
	return v + "0123456789abcdef0123456789abcdef"
}

// field resolves a downward API field path the way the API server allows
// them in env.
func (p Pod) field(path string) (string, error) {
	ip := podIP
	if p.Spec.HostNetwork {
		ip = p.Node.IP
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "spec.nodeName":
		return p.Node.Name, nil
	case "spec.serviceAccountName":
		if p.Spec.ServiceAccountName == "" {
			return "default", nil
		}
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return p.Node.IP, nil
	case "status.podIP", "status.podIPs":
		return ip, nil
	}
	if m := fieldLabel.FindStringSubmatch(path); m != nil {
		return p.Labels[m[1]], nil
	}
	if m := fieldAnnotation.FindStringSubmatch(path); m != nil {
		return p.Annotations[m[1]], nil
	}
	return "", fmt.Errorf("fieldRef %q is not a field the downward API gives to env (node labels are not among them)", path)
}

// resourceValue is what the kubelet puts in a resourceFieldRef variable:
// the container's request or limit divided by the divisor, rounded up
// (CPU in millicores first).
func resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		return "", fmt.Errorf("resourceFieldRef names container %q; this is %q", ref.ContainerName, c.Name)
	}
	var list corev1.ResourceList
	kind, name, _ := strings.Cut(ref.Resource, ".")
	switch kind {
	case "limits":
		list = c.Resources.Limits
	case "requests":
		list = c.Resources.Requests
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not limits.NAME or requests.NAME", ref.Resource)
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "", fmt.Errorf("resourceFieldRef %s: the container sets no %s, so the kubelet would give the node's whole allocatable amount", ref.Resource, ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	n, d := q.Value(), divisor.Value()
	if name == string(corev1.ResourceCPU) {
		n, d = q.MilliValue(), divisor.MilliValue()
	}
	if d <= 0 {
		return "", fmt.Errorf("resourceFieldRef %s: divisor %s", ref.Resource, divisor.String())
	}
	return strconv.FormatInt((n+d-1)/d, 10), nil
}
