//go:build unix

package helm

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Object names of the release: Helm's fullname (release-chart) and the
// component.
const (
	fullname       = release + "-partnerapi"
	authserver     = fullname + "-authserver"
	resourceserver = fullname + "-resourceserver"
	adminService   = fullname + "-admin"
	trialRedis     = fullname + "-redis"
)

// TestChart lints and renders every case of the matrix and checks what
// each renders: the objects decode strictly, and they fit together and
// with the product.
func TestChart(t *testing.T) {
	t.Parallel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lint(t, c.values)
			r := template(t, c.values)
			v := parseValues(t, c.values)
			checkDeployments(t, r, c)
			checkServices(t, r, v)
			checkScaling(t, r, c)
			checkSecrets(t, r, v)
			checkNetworkPolicies(t, r, v)
			checkPublicRoutes(t, r, c)
			checkMonitoring(t, r, c)
			checkTestPod(t, r, v)
			checkTracing(t, r, v)
		})
	}
}

// servers are the two Deployments every case renders.
var servers = []string{authserver, resourceserver}

func checkDeployments(t *testing.T, r *rendered, c chartCase) {
	t.Helper()
	want := slices.Clone(servers)
	if c.trial {
		want = append(want, trialRedis)
	}
	var got []string
	for _, d := range r.Deployments {
		got = append(got, d.Name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Deployments %v, want %v", got, want)
	}
	for _, d := range r.Deployments {
		checkRestricted(t, d)
		if d.Name == trialRedis {
			continue
		}
		spec := d.Spec.Template.Spec
		if c.hpa != (d.Spec.Replicas == nil) {
			t.Errorf("%s: replicas %v with autoscaling %v: the HorizontalPodAutoscaler alone sets them", d.Name, d.Spec.Replicas, c.hpa)
		}
		if d.Spec.Replicas != nil && *d.Spec.Replicas < 2 {
			t.Errorf("%s: %d replicas, deploy/docs/scaling.md (Capacity) asks for at least two", d.Name, *d.Spec.Replicas)
		}
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: %d containers", d.Name, len(spec.Containers))
		}
		ctr := spec.Containers[0]
		checkProbes(t, d.Name, ctr)
		checkGrace(t, d.Name, spec)
		checkSpread(t, d)
	}
}

// checkRestricted checks the Pod Security Standards' restricted profile
// and the resources: non-root, read-only root filesystem, every
// capability dropped, RuntimeDefault seccomp, no privilege escalation,
// requests and limits for CPU and memory.
func checkRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	pod := spec.SecurityContext
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot {
		t.Errorf("%s: the pod does not set runAsNonRoot", d.Name)
	}
	if pod == nil || pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: the pod's seccomp profile is not RuntimeDefault", d.Name)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token it has no use for", d.Name)
	}
	for _, ctr := range spec.Containers {
		sc := ctr.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s/%s: no securityContext", d.Name, ctr.Name)
			continue
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s/%s: the root filesystem is writable", d.Name, ctr.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s/%s: privilege escalation allowed", d.Name, ctr.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			t.Errorf("%s/%s: capabilities %+v, want all dropped, none added", d.Name, ctr.Name, sc.Capabilities)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("%s/%s: privileged", d.Name, ctr.Name)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := ctr.Resources.Requests[res], ctr.Resources.Limits[res]
			if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
				t.Errorf("%s/%s: %s request %s, limit %s: want both, the request at most the limit", d.Name, ctr.Name, res, req.String(), lim.String())
			}
		}
	}
}

// checkProbes checks the three probes: the real /healthz (startup and
// liveness: the process answers) and /readyz (readiness: Redis and, for
// the resource server, the keys), on a port the container declares.
func checkProbes(t *testing.T, name string, ctr corev1.Container) {
	t.Helper()
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"startup", ctr.StartupProbe, "/healthz"}, {"readiness", ctr.ReadinessProbe, "/readyz"}, {"liveness", ctr.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", name, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: %s probe on %s, want %s", name, p.kind, p.probe.HTTPGet.Path, p.path)
		}
		if _, ok := containerPort(ctr, p.probe.HTTPGet.Port); !ok {
			t.Errorf("%s: %s probe on port %s, which the container does not declare", name, p.kind, p.probe.HTTPGet.Port.String())
		}
		if p.probe.TimeoutSeconds >= p.probe.PeriodSeconds {
			t.Errorf("%s: %s probe times out after %d s, not within its period of %d s", name, p.kind, p.probe.TimeoutSeconds, p.probe.PeriodSeconds)
		}
	}
	// A Redis outage makes a pod unready (readiness) long before anything
	// restarts it: liveness asks /healthz, which checks no dependency, and
	// gives up later than readiness does.
	if r, l := ctr.ReadinessProbe, ctr.LivenessProbe; r != nil && l != nil &&
		r.PeriodSeconds*r.FailureThreshold >= l.PeriodSeconds*l.FailureThreshold {
		t.Errorf("%s: readiness gives up after %d s, liveness after %d s: want readiness first", name,
			r.PeriodSeconds*r.FailureThreshold, l.PeriodSeconds*l.FailureThreshold)
	}
}

// containerPort resolves a probe's or Service's target port (a name or a
// number) to the container's port.
func containerPort(ctr corev1.Container, port intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, p := range ctr.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// checkSpread checks the pods spread over zones and nodes, counting this
// Deployment's own pods.
func checkSpread(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	keys := map[string]bool{}
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		sel, err := metaSelector(c.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s: spread constraint on %s does not select the Deployment's pods", d.Name, c.TopologyKey)
		}
		keys[c.TopologyKey] = true
	}
	for _, k := range []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"} {
		if !keys[k] {
			t.Errorf("%s: no topology spread over %s", d.Name, k)
		}
	}
}

// podsOf returns the Deployment whose pods selector selects, if exactly
// one does.
func podsOf(r *rendered, selector map[string]string) *appsv1.Deployment {
	var found *appsv1.Deployment
	for _, d := range r.Deployments {
		if len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			if found != nil {
				return nil
			}
			found = d
		}
	}
	return found
}

// checkServices checks that every Service selects the pods of one
// Deployment and that each of its ports reaches a port those pods'
// container declares, with the same protocol; and that the admin port is
// on the admin Service alone.
func checkServices(t *testing.T, r *rendered, v values) {
	t.Helper()
	for _, s := range r.Services {
		d := podsOf(r, s.Spec.Selector)
		if d == nil {
			t.Errorf("Service %s selects the pods of no single Deployment", s.Name)
			continue
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		for _, p := range s.Spec.Ports {
			cp, ok := containerPort(ctr, p.TargetPort)
			if !ok {
				t.Errorf("Service %s port %s: target %s is no port of %s's container", s.Name, p.Name, p.TargetPort.String(), d.Name)
				continue
			}
			if cp.Protocol != p.Protocol {
				t.Errorf("Service %s port %s: %s, the container's %s", s.Name, p.Name, p.Protocol, cp.Protocol)
			}
			if (cp.Name == "admin") != (s.Name == adminService) {
				t.Errorf("Service %s port %s reaches the container's %s port: the admin port is on the admin Service only", s.Name, p.Name, cp.Name)
			}
		}
	}
	admin := v.bool("authserver", "admin", "enabled")
	if (r.service(adminService) != nil) != admin {
		t.Errorf("admin Service rendered: %v, admin enabled: %v", r.service(adminService) != nil, admin)
	}
}

// serviceNames are the names a pod resolves a Service by.
func serviceNames(name string) []string {
	return []string{name, name + "." + namespace, name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local"}
}

// serviceHost reports the Service a host name resolves to in namespace.
func serviceHost(r *rendered, host string) *corev1.Service {
	for _, s := range r.Services {
		if slices.Contains(serviceNames(s.Name), strings.TrimSuffix(host, ".")) {
			return s
		}
	}
	return nil
}
