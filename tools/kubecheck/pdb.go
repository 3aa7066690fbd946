package kubecheck

import (
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
