// Package kubecheck checks the Kubernetes manifests of deploy/kubernetes/
// without a cluster: every document is decoded strictly into its
// Kubernetes API type (an unknown field, kind or version is an error, as
// the API server would make it), and the objects are checked against each
// other and against the server: selectors, ports, probes, the config each
// pod mounts (through the real `srtwhep -check`) and the environment
// Kubernetes would give it.
//
// It lives in the tools/ module so the server's go.mod does not carry
// k8s.io/api.
package kubecheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one document of a manifest file.
type Object struct {
	File  string // relative to the manifest directory
	Index int    // 0-based position among the file's documents
	GVK   schema.GroupVersionKind
	Obj   runtime.Object
}

// Name returns the object's metadata.name.
func (o *Object) Name() string {
	a, err := meta.Accessor(o.Obj)
	if err != nil {
		return ""
	}
	return a.GetName()
}

// Namespace returns the object's metadata.namespace.
func (o *Object) Namespace() string {
	a, err := meta.Accessor(o.Obj)
	if err != nil {
		return ""
	}
	return a.GetNamespace()
}

// String names the object the way problems refer to it.
func (o *Object) String() string {
	return fmt.Sprintf("%s: %s/%s", o.File, o.GVK.Kind, o.Name())
}

// kinds are the only kinds the manifests may use: each has checks below.
// Anything else, even a valid Kubernetes kind, is refused until it has
// some.
var kinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Namespace"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	networkingv1.SchemeGroupVersion.WithKind("Ingress"),
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
	monitoringV1.WithKind("ServiceMonitor"),
	kustomizeV1beta1.WithKind("Kustomization"),
}

// decoder is the API server's own YAML decoding in strict mode: unknown
// and duplicate fields are errors, field names are case-sensitive, and
// apiVersion/kind must be registered.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme, policyv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	scheme.AddKnownTypes(monitoringV1, &ServiceMonitor{})
	scheme.AddKnownTypes(kustomizeV1beta1, &Kustomization{})
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
}()

// Decode decodes every document of a multi-document YAML file. Documents
// holding only comments are skipped.
func Decode(file string, data []byte) ([]Object, error) {
	r := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if empty, err := isEmpty(doc); err != nil || empty {
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
			}
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if !slices.Contains(kinds, *gvk) {
			return nil, fmt.Errorf("%s: document %d: %s is not a kind these checks know (%s); add it to tools/kubecheck with checks of its own", file, i+1, gvk, kindList())
		}
		objs = append(objs, Object{File: file, Index: i, GVK: *gvk, Obj: obj})
	}
}

func isEmpty(doc []byte) (bool, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return false, err
	}
	return string(bytes.TrimSpace(j)) == "null", nil
}

func kindList() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.GroupVersion().String() + " " + k.Kind
	}
	return strings.Join(names, ", ")
}

// Manifests is every object of a manifest directory.
type Manifests struct {
	Dir     string
	Files   []string // every .yaml/.yml file, relative to Dir
	Objects []Object
}

// Load decodes every .yaml and .yml file under dir, recursively. Each file
// that does not decode is one problem; the objects of the others are kept.
func Load(dir string) (*Manifests, []string) {
	m := &Manifests{Dir: dir}
	var problems []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		m.Files = append(m.Files, rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := Decode(rel, data)
		if err != nil {
			problems = append(problems, err.Error())
			return nil
		}
		m.Objects = append(m.Objects, objs...)
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading %s: %v", dir, err))
	}
	return m, problems
}

// all returns the objects of one Go type, in file order.
func all[T runtime.Object](m *Manifests) []T {
	var out []T
	for _, o := range m.Objects {
		if v, ok := o.Obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// objectOf returns the Object holding obj.
func (m *Manifests) objectOf(obj runtime.Object) *Object {
	for i := range m.Objects {
		if m.Objects[i].Obj == obj {
			return &m.Objects[i]
		}
	}
	return &Object{}
}
