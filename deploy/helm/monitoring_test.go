//go:build unix

package helm

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// The one source of the alert rules and of the dashboards, and the
// chart's names for them (symbolic links, which Helm follows when it
// loads a chart from its directory and resolves when it packages one).
const (
	alertsFile     = "deploy/prometheus/alerts.yml"
	chartAlerts    = chartDir + "/files/alerts.yml"
	dashboardsDir  = "deploy/grafana/dashboards"
	chartDashboard = chartDir + "/files/dashboards"
)

// TestOneSource checks the chart's alert rules and dashboards are the
// files promtool, compose and the topology suite read, not copies.
func TestOneSource(t *testing.T) {
	t.Parallel()
	repo := e2etest.RepoRoot(t)
	for _, pair := range [][2]string{{chartAlerts, alertsFile}, {chartDashboard, dashboardsDir}} {
		link, err := os.Lstat(filepath.Join(repo, pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		if link.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is a copy: it must be a symbolic link to %s", pair[0], pair[1])
		}
		a, errA := os.Stat(filepath.Join(repo, pair[0]))
		b, errB := os.Stat(filepath.Join(repo, pair[1]))
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("%s is not %s (%v, %v)", pair[0], pair[1], errA, errB)
		}
	}
}

// checkMonitoring checks the ServiceMonitor scrapes both servers' metrics
// ports under the jobs the rules name, the PrometheusRule's rules are
// alerts.yml's, and each dashboard is a ConfigMap with the sidecar's label
// and the file's bytes.
func checkMonitoring(t *testing.T, r *rendered, c chartCase) {
	t.Helper()
	want := map[bool]int{true: 1, false: 0}[c.monitoring]
	if len(r.ServiceMonitors) != want || len(r.PrometheusRules) != want {
		t.Fatalf("%d ServiceMonitors and %d PrometheusRules, want %d", len(r.ServiceMonitors), len(r.PrometheusRules), want)
	}
	if !c.monitoring {
		return
	}
	repo := e2etest.RepoRoot(t)
	rules, err := os.ReadFile(filepath.Join(repo, alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	// The jobs the rules select on are the jobs the ServiceMonitor gives.
	var jobs []string
	for _, m := range regexp.MustCompile(`job=~"([^"]+)"`).FindAllSubmatch(rules, -1) {
		for _, j := range bytes.Split(m[1], []byte("|")) {
			if !slices.Contains(jobs, string(j)) {
				jobs = append(jobs, string(j))
			}
		}
	}
	sm := r.ServiceMonitors[0]
	sel, err := metaSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	var scraped []string
	for _, s := range r.Services {
		if !sel.Matches(labels.Set(s.Labels)) {
			continue
		}
		if servicePortByName(s.Spec.Ports, "metrics") {
			scraped = append(scraped, s.Labels[sm.Spec.JobLabel])
		}
	}
	slices.Sort(scraped)
	slices.Sort(jobs)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || !slices.Equal(scraped, jobs) {
		t.Errorf("the ServiceMonitor scrapes jobs %v, the rules name %v", scraped, jobs)
	}

	// The rules: alerts.yml's groups, decoded both ways.
	var fromFile, fromChart any
	if err := yaml.Unmarshal(rules, &fromFile); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.Marshal(r.PrometheusRules[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(spec, &fromChart); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, fromChart) {
		t.Errorf("the PrometheusRule's rules differ from %s:\n%s", alertsFile, spec)
	}

	files, err := filepath.Glob(filepath.Join(repo, dashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dashboardsDir, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, cm := range r.ConfigMaps {
			if data, ok := cm.Data[filepath.Base(f)]; ok {
				found = true
				if data != string(bytes.TrimRight(body, "\n")) {
					t.Errorf("ConfigMap %s: %s differs from the file", cm.Name, filepath.Base(f))
				}
				if cm.Labels["grafana_dashboard"] != "1" {
					t.Errorf("ConfigMap %s: labels %v, without the sidecar's grafana_dashboard", cm.Name, cm.Labels)
				}
			}
		}
		if !found {
			t.Errorf("no ConfigMap holds the dashboard %s", filepath.Base(f))
		}
	}
}

// servicePortByName reports whether ports has one called name.
func servicePortByName(ports []corev1.ServicePort, name string) bool {
	return slices.ContainsFunc(ports, func(p corev1.ServicePort) bool { return p.Name == name })
}

// checkTestPod checks the helm test hook: rendered with
// tests.credentialsSecret only, a test hook, restricted like the servers,
// its URLs the servers' Services on their http port.
func checkTestPod(t *testing.T, r *rendered, v values) {
	t.Helper()
	if v.string("tests", "credentialsSecret") == "" {
		if len(r.Pods) != 0 {
			t.Errorf("%d test pods without tests.credentialsSecret", len(r.Pods))
		}
		return
	}
	if len(r.Pods) != 1 {
		t.Fatalf("%d test pods, want one", len(r.Pods))
	}
	pod := r.Pods[0]
	if pod.Annotations["helm.sh/hook"] != "test" {
		t.Errorf("test pod annotations %v: not a helm test hook", pod.Annotations)
	}
	ctr := pod.Spec.Containers[0]
	if sc := ctr.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("test pod: securityContext %+v, want the servers' restrictions", ctr.SecurityContext)
	}
	for name, want := range map[string]string{"TOKEN_URL": authserver, "ME_URL": resourceserver} {
		var val string
		for _, e := range ctr.Env {
			if e.Name == name {
				val = e.Value
			}
		}
		u, err := url.Parse(val)
		if err != nil {
			t.Fatalf("test pod %s=%q: %v", name, val, err)
		}
		s := serviceHost(r, u.Hostname())
		port, _ := strconv.Atoi(u.Port())
		if s == nil || s.Name != want || servicePortName(s, int32(port)) != "http" {
			t.Errorf("test pod %s=%s: want %s's http port", name, val, want)
		}
	}
}
