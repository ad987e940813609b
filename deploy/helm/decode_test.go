package helm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// rendered is every object of one helm template, decoded into its API
// type, by kind.
type rendered struct {
	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	Secrets         []*corev1.Secret
	ConfigMaps      []*corev1.ConfigMap
	Pods            []*corev1.Pod
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	PDBs            []*policyv1.PodDisruptionBudget
	Ingresses       []*networkingv1.Ingress
	NetworkPolicies []*networkingv1.NetworkPolicy
	HTTPRoutes      []*gatewayv1.HTTPRoute
	ServiceMonitors []*monitoringv1.ServiceMonitor
	PrometheusRules []*monitoringv1.PrometheusRule
	// Count is the number of objects.
	Count int
}

// typeMeta is what names an object's type.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// decodeAll splits helm template's output into its documents and decodes
// each strictly (sigs.k8s.io/yaml.UnmarshalStrict: a field the type does
// not have, or a key given twice, fails) into the type its apiVersion and
// kind name. A type the chart is not meant to render fails too.
func decodeAll(out []byte) (*rendered, error) {
	r := &rendered{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		if tm.Kind == "" && tm.APIVersion == "" {
			continue // only comments
		}
		obj, add := r.slot(tm)
		if obj == nil {
			return nil, fmt.Errorf("the chart renders %s %s, which this test does not know: add its type", tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s %s does not decode strictly: %v\n%s", tm.APIVersion, tm.Kind, err, doc)
		}
		add()
		r.Count++
	}
}

// slot returns a new object of tm's type and the function that keeps it.
func (r *rendered) slot(tm typeMeta) (any, func()) {
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		return o, func() { r.Deployments = append(r.Deployments, o) }
	case "v1 Service":
		o := &corev1.Service{}
		return o, func() { r.Services = append(r.Services, o) }
	case "v1 Secret":
		o := &corev1.Secret{}
		return o, func() { r.Secrets = append(r.Secrets, o) }
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		return o, func() { r.ConfigMaps = append(r.ConfigMaps, o) }
	case "v1 Pod":
		o := &corev1.Pod{}
		return o, func() { r.Pods = append(r.Pods, o) }
	case "autoscaling/v2 HorizontalPodAutoscaler":
		o := &autoscalingv2.HorizontalPodAutoscaler{}
		return o, func() { r.HPAs = append(r.HPAs, o) }
	case "policy/v1 PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		return o, func() { r.PDBs = append(r.PDBs, o) }
	case "networking.k8s.io/v1 Ingress":
		o := &networkingv1.Ingress{}
		return o, func() { r.Ingresses = append(r.Ingresses, o) }
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		return o, func() { r.NetworkPolicies = append(r.NetworkPolicies, o) }
	case "gateway.networking.k8s.io/v1 HTTPRoute":
		o := &gatewayv1.HTTPRoute{}
		return o, func() { r.HTTPRoutes = append(r.HTTPRoutes, o) }
	case "monitoring.coreos.com/v1 ServiceMonitor":
		o := &monitoringv1.ServiceMonitor{}
		return o, func() { r.ServiceMonitors = append(r.ServiceMonitors, o) }
	case "monitoring.coreos.com/v1 PrometheusRule":
		o := &monitoringv1.PrometheusRule{}
		return o, func() { r.PrometheusRules = append(r.PrometheusRules, o) }
	}
	return nil, nil
}

// deployment returns the Deployment named name.
func (r *rendered) deployment(name string) *appsv1.Deployment {
	for _, d := range r.Deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// service returns the Service named name.
func (r *rendered) service(name string) *corev1.Service {
	for _, s := range r.Services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// secret returns the Secret named name.
func (r *rendered) secret(name string) *corev1.Secret {
	for _, s := range r.Secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}
