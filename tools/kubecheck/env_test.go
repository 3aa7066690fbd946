package kubecheck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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
