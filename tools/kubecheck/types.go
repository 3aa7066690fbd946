package kubecheck

import (
	"encoding/json"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The two kinds that k8s.io/api does not have. Each is a small struct of
// the fields the manifests may use, decoded as strictly as the rest: a
// field left out here is refused until it is added (with the CRD's or
// kustomize's spelling).
var (
	monitoringV1     = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}
	kustomizeV1beta1 = schema.GroupVersion{Group: "kustomize.config.k8s.io", Version: "v1beta1"}
)

// ServiceMonitor is the Prometheus operator's scrape target
// (monitoring.coreos.com/v1), after its CRD.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec is the CRD's spec, in part.
type ServiceMonitorSpec struct {
	JobLabel          string                `json:"jobLabel,omitempty"`
	Selector          *metav1.LabelSelector `json:"selector"`
	NamespaceSelector NamespaceSelector     `json:"namespaceSelector,omitempty"`
	Endpoints         []Endpoint            `json:"endpoints"`
}

// NamespaceSelector picks the namespaces whose Services are selected.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// Endpoint is one scraped port of the selected Services.
type Endpoint struct {
	Port          string              `json:"port,omitempty"`
	TargetPort    *intstr.IntOrString `json:"targetPort,omitempty"`
	Path          string              `json:"path,omitempty"`
	Scheme        string              `json:"scheme,omitempty"`
	Interval      string              `json:"interval,omitempty"`
	ScrapeTimeout string              `json:"scrapeTimeout,omitempty"`
	HonorLabels   bool                `json:"honorLabels,omitempty"`
}

// DeepCopyObject makes ServiceMonitor a runtime.Object.
func (s *ServiceMonitor) DeepCopyObject() runtime.Object { return deepCopy(s) }

// Kustomization is kustomization.yaml (kustomize.config.k8s.io/v1beta1), in
// part.
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	Resources         []string `json:"resources,omitempty"`
	Images            []Image  `json:"images,omitempty"`
	Patches           []Patch  `json:"patches,omitempty"`
}

// Image rewrites the image of every container that runs Name.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Patch is a strategic-merge or JSON 6902 patch, from a file or inline.
type Patch struct {
	Path   string          `json:"path,omitempty"`
	Patch  string          `json:"patch,omitempty"`
	Target *PatchTarget    `json:"target,omitempty"`
	Opts   map[string]bool `json:"options,omitempty"`
}

// PatchTarget selects the objects a patch applies to.
type PatchTarget struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// DeepCopyObject makes Kustomization a runtime.Object.
func (k *Kustomization) DeepCopyObject() runtime.Object { return deepCopy(k) }

// deepCopy copies through JSON: these objects are small and copied only
// when a scheme asks.
func deepCopy[T any, P interface {
	*T
	runtime.Object
}](v P) runtime.Object {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("copying %T: %v", v, err))
	}
	out := P(new(T))
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("copying %T: %v", v, err))
	}
	return out
}

// promDuration is the CRD's pattern for interval and scrapeTimeout.
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)
