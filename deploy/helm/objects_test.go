//go:build unix

package helm

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

// drainBound is the longest a server takes from SIGTERM to its exit
// (pkg/httpserver's Group.Serve): the API and the admin listener shut down
// together, in-flight requests get httpserver.ShutdownTimeout; then the
// metrics listener, with as long again. The resource server then stops its
// JWKS cache, which waits for a fetch in flight (jwks.DefaultFetchTimeout
// at most).
func drainBound(deployment string) time.Duration {
	d := 2 * httpserver.ShutdownTimeout
	if deployment == resourceserver {
		d += jwks.DefaultFetchTimeout
	}
	return d
}

// checkGrace checks that the preStop sleep and the server's longest
// drain fit in terminationGracePeriodSeconds, so that the kubelet's
// SIGKILL never cuts a request short. TestBinaries times the real drain.
func checkGrace(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	ctr := spec.Containers[0]
	if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil || ctr.Lifecycle.PreStop.Sleep == nil {
		t.Errorf("%s: no preStop sleep: new connections may still arrive after SIGTERM", name)
		return
	}
	sleep := time.Duration(ctr.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if spec.TerminationGracePeriodSeconds == nil {
		t.Errorf("%s: no terminationGracePeriodSeconds", name)
		return
	}
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if need := sleep + drainBound(name); need > grace {
		t.Errorf("%s: preStop %v + drain up to %v = %v, more than terminationGracePeriodSeconds %v", name, sleep, drainBound(name), need, grace)
	}
}

// checkScaling checks the HorizontalPodAutoscalers (autoscaling/v2, CPU,
// a scale-down behavior) and the PodDisruptionBudgets.
func checkScaling(t *testing.T, r *rendered, c chartCase) {
	t.Helper()
	if want := map[bool]int{true: 2, false: 0}[c.hpa]; len(r.HPAs) != want {
		t.Fatalf("%d HorizontalPodAutoscalers, want %d", len(r.HPAs), want)
	}
	for _, h := range r.HPAs {
		d := r.deployment(h.Spec.ScaleTargetRef.Name)
		if d == nil || h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.APIVersion != "apps/v1" {
			t.Errorf("HPA %s scales %+v, no Deployment of the chart", h.Name, h.Spec.ScaleTargetRef)
		}
		if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
			h.Spec.Metrics[0].Resource.Target.AverageUtilization == nil {
			t.Errorf("HPA %s: metrics %+v, want CPU utilization", h.Name, h.Spec.Metrics)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HPA %s: replicas %v..%d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		if b := h.Spec.Behavior; b == nil || b.ScaleDown == nil || len(b.ScaleDown.Policies) == 0 || b.ScaleDown.StabilizationWindowSeconds == nil {
			t.Errorf("HPA %s: no scale-down behavior", h.Name)
		}
	}
	if len(r.PDBs) != 2 {
		t.Fatalf("%d PodDisruptionBudgets, want one per server", len(r.PDBs))
	}
	for _, p := range r.PDBs {
		sel, err := metaSelector(p.Spec.Selector)
		d := r.deployment(p.Name)
		if err != nil || d == nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("PDB %s does not select its Deployment's pods", p.Name)
		}
		if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
			t.Errorf("PDB %s allows any disruption", p.Name)
		}
	}
}

// checkSecrets checks where the keys and the Redis URL come from: a
// Secret the values name (none rendered), or one rendered from the values
// as they are. The chart generates nothing.
func checkSecrets(t *testing.T, r *rendered, v values) {
	t.Helper()
	d := r.deployment(authserver)
	vol := d.Spec.Template.Spec.Volumes
	if len(vol) != 1 || vol[0].Secret == nil {
		t.Fatalf("authserver volumes %+v, want the keys' Secret", vol)
	}
	keysSecret, keysKey := fullname+"-keys", v.string("keys", "secretKey")
	if name := v.string("keys", "existingSecret"); name != "" {
		keysSecret = name
		if r.secret(fullname+"-keys") != nil {
			t.Errorf("keys.existingSecret is set, and the chart renders a keys Secret too")
		}
	} else if s := r.secret(keysSecret); s == nil || string(s.Data[keysKey]) != v.string("keys", "jwks") || len(s.Data) != 1 {
		t.Errorf("the keys Secret does not hold exactly keys.jwks: %+v", s)
	}
	if vol[0].Secret.SecretName != keysSecret || len(vol[0].Secret.Items) != 1 || vol[0].Secret.Items[0].Key != keysKey {
		t.Errorf("the keys volume mounts %+v, want %s key %s", vol[0].Secret, keysSecret, keysKey)
	}
	redisSecret, redisKey := fullname+"-redis", "redis-url"
	if name := v.string("redis", "existingSecret"); name != "" {
		redisSecret, redisKey = name, v.string("redis", "existingSecretKey")
	}
	for _, name := range servers {
		ref := envFrom(r.deployment(name).Spec.Template.Spec.Containers[0], "REDIS_URL")
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != redisSecret || ref.SecretKeyRef.Key != redisKey {
			t.Errorf("%s: REDIS_URL from %+v, want Secret %s key %s", name, ref, redisSecret, redisKey)
		}
	}
}

// envFrom is the valueFrom of the container's variable name.
func envFrom(ctr corev1.Container, name string) *corev1.EnvVarSource {
	for _, e := range ctr.Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

// checkNetworkPolicies checks what each server may reach and who may reach
// it: the resource server only Redis, the DNS and the token service's
// http port; the admin port only the peers networkPolicy.adminFrom names;
// the metrics ports only networkPolicy.metricsFrom.
func checkNetworkPolicies(t *testing.T, r *rendered, v values) {
	t.Helper()
	if !v.bool("networkPolicy", "enabled") {
		return
	}
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, np := range r.NetworkPolicies {
		policies[np.Name] = np
		sel, err := metaSelector(&np.Spec.PodSelector)
		if d := r.deployment(np.Name); err != nil || d == nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy %s does not select its Deployment's pods", np.Name)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			t.Errorf("NetworkPolicy %s: policy types %v, want both", np.Name, np.Spec.PolicyTypes)
		}
	}
	var adminFrom, metricsFrom, dnsPeers, redisPeers []networkingv1.NetworkPolicyPeer
	v.decode(t, &adminFrom, "networkPolicy", "adminFrom")
	v.decode(t, &metricsFrom, "networkPolicy", "metricsFrom")
	v.decode(t, &dnsPeers, "networkPolicy", "dns", "peers")
	v.decode(t, &redisPeers, "redis", "networkPeers")
	if v.bool("redis", "trial", "enabled") {
		redisPeers = []networkingv1.NetworkPolicyPeer{{PodSelector: r.deployment(trialRedis).Spec.Selector}}
	}
	redisPorts := map[string][]int32{"node": {6379}, "sentinel": {26379, 6379}, "cluster": {6379}}[v.string("redis", "topology")]

	res := policies[resourceserver]
	auth := policies[authserver]
	if res == nil || auth == nil {
		t.Fatalf("NetworkPolicies %v, want one per server", slices.Sorted(maps.Keys(policies)))
	}
	// The resource server's egress: exactly Redis, the DNS and the JWKS
	// (and the OTLP collector when otel.endpoint is set).
	collector, collectorPeers := otelCollector(t, v)
	for _, e := range res.Spec.Egress {
		ports := portsOf(e.Ports)
		switch {
		case reflect.DeepEqual(ports, redisPorts) && peersEqual(e.To, redisPeers):
		case reflect.DeepEqual(ports, []int32{53, 53}) && peersEqual(e.To, dnsPeers):
		case collector != 0 && reflect.DeepEqual(ports, []int32{collector}) && peersEqual(e.To, collectorPeers):
		case len(e.Ports) == 1 && e.Ports[0].Port != nil && *e.Ports[0].Port == intstr.FromString("http") && len(e.To) == 1 &&
			e.To[0].PodSelector != nil && reflect.DeepEqual(e.To[0].PodSelector.MatchLabels, r.deployment(authserver).Spec.Selector.MatchLabels):
		default:
			t.Errorf("the resource server may also reach %+v on %v: it needs Redis, the DNS and the token service's JWKS only", e.To, ports)
		}
	}
	if want := 3 + min(int(collector), 1); len(res.Spec.Egress) != want {
		t.Errorf("the resource server has %d egress rules, want Redis, the DNS and the JWKS (and the collector): %d", len(res.Spec.Egress), want)
	}
	if collector != 0 && !slices.ContainsFunc(auth.Spec.Egress, func(e networkingv1.NetworkPolicyEgressRule) bool {
		return reflect.DeepEqual(portsOf(e.Ports), []int32{collector}) && peersEqual(e.To, collectorPeers)
	}) {
		t.Errorf("the token service may not reach the OTLP collector on %d: %+v", collector, auth.Spec.Egress)
	}
	// Ingress: every rule names its ports; admin and metrics their peers.
	for _, np := range []*networkingv1.NetworkPolicy{res, auth} {
		for _, in := range np.Spec.Ingress {
			if len(in.Ports) != 1 || in.Ports[0].Port == nil {
				t.Errorf("%s: an ingress rule for ports %+v: each rule opens one named port", np.Name, in.Ports)
				continue
			}
			switch port := in.Ports[0].Port.String(); port {
			case "admin":
				if np != auth || len(adminFrom) == 0 || !peersEqual(in.From, adminFrom) {
					t.Errorf("%s: the admin port is open to %+v, want networkPolicy.adminFrom %+v", np.Name, in.From, adminFrom)
				}
			case "metrics":
				if len(metricsFrom) == 0 || !peersEqual(in.From, metricsFrom) {
					t.Errorf("%s: the metrics port is open to %+v, want networkPolicy.metricsFrom", np.Name, in.From)
				}
			case "http":
			default:
				t.Errorf("%s: ingress on port %s", np.Name, port)
			}
		}
	}
	if v.bool("authserver", "admin", "enabled") && !slices.ContainsFunc(auth.Spec.Ingress, func(in networkingv1.NetworkPolicyIngressRule) bool {
		return len(in.Ports) == 1 && in.Ports[0].Port.String() == "admin"
	}) {
		t.Errorf("the admin port has no ingress rule")
	}
}

func portsOf(ps []networkingv1.NetworkPolicyPort) []int32 {
	var out []int32
	for _, p := range ps {
		if p.Port != nil {
			out = append(out, p.Port.IntVal)
		}
	}
	return out
}

func peersEqual(a, b []networkingv1.NetworkPolicyPeer) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
