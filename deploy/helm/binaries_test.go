//go:build unix

package helm

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestBinaries starts the real binaries as the rendered Deployments say
// (image entrypoint, arguments, environment, Secrets, volumes, ports),
// against a real Redis: the test's own one (redis.url) and the trial
// Redis, itself started from its rendered Deployment. Each must pass the
// rendered probes on the rendered ports, serve every path the Ingress
// routes to it, answer the metrics and admin ports through their
// Services; the helm test pod's script must get a token and call
// /api/v1/me/ with it; and each server must exit cleanly on SIGTERM
// within its terminationGracePeriodSeconds less the preStop sleep.
func TestBinaries(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()
	e2etest.RequireCommand(t, "curl")
	keys := signingKeys(t)
	t.Run("external-redis", func(t *testing.T) {
		t.Parallel()
		prefix := redistest.Prefix(t, redistest.Client(t))
		runBinaries(t, map[string]any{
			"redis": map[string]any{"url": redistest.URL(), "keyPrefix": prefix},
		}, keys, false)
	})
	t.Run("trial-redis", func(t *testing.T) {
		t.Parallel()
		redistest.StartServer(t) // fails or skips the test, like every Redis test, without redis-server
		runBinaries(t, map[string]any{
			"redis": map[string]any{"trial": map[string]any{"enabled": true}},
		}, keys, true)
	})
	// The long suites: the same against a Sentinel-managed primary and a
	// Cluster of the test's own (redistest), with the topology the values
	// name.
	t.Run("sentinel", func(t *testing.T) {
		redistest.Long(t)
		t.Parallel()
		g := redistest.StartSentinel(t)
		runBinaries(t, map[string]any{
			"redis": map[string]any{"topology": "sentinel", "url": g.URL()},
		}, keys, false)
	})
	t.Run("cluster", func(t *testing.T) {
		redistest.Long(t)
		t.Parallel()
		c := redistest.StartCluster(t)
		runBinaries(t, map[string]any{
			"redis": map[string]any{"topology": "cluster", "url": c.URL()},
		}, keys, false)
	})
}

// signingKeys is a JWK set made by the real key command, as an operator
// makes the one given to keys.jwks.
func signingKeys(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	cmd := exec.Command(filepath.Join(e2etest.BuildServers(t), "authserver"), "keys", "generate", "--out", path)
	cmd.Env = e2etest.BaseEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("authserver keys generate: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runBinaries(t *testing.T, redis map[string]any, keys string, trial bool) {
	vals := map[string]any{
		"publicBaseURL": "http://api.example.test",
		"keys":          map[string]any{"jwks": keys},
		"tests":         map[string]any{"credentialsSecret": "partner-sandbox"},
		"ingress":       map[string]any{"enabled": true, "hosts": []string{"api.example.test"}},
	}
	for k, v := range redis {
		vals[k] = v
	}
	raw, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	r := template(t, string(raw))
	l := newLoopback(t, r)
	if trial {
		l.start(trialRedis)
	}
	procs := map[string]*e2etest.Process{authserver: l.start(authserver)}
	procs[resourceserver] = l.start(resourceserver) // its /readyz needs the JWKS, through the authserver's Service

	// Every path each server serves, through the Ingress's route to its
	// Service: the server behind it has the route (a GET on a POST route
	// is 405, an unknown path 404).
	routes := ingressRoutes(t, r, "api.example.test")
	for name, paths := range servedPaths {
		for _, path := range paths {
			svc := r.service(ingressBackend(routes, path))
			if svc == nil {
				t.Fatalf("the Ingress routes %s nowhere", path)
			}
			addr, _ := l.serviceAddr(svc.Name, servicePort(t, svc, "http"))
			if code, body := get(t, "http://"+addr+path); code == http.StatusNotFound {
				t.Errorf("GET %s on %s (routed for %s): 404 %s", path, svc.Name, name, body)
			}
		}
	}
	// The metrics ports (the ServiceMonitor's) and the admin Service.
	for _, name := range servers {
		addr, _ := l.serviceAddr(name, servicePort(t, r.service(name), "metrics"))
		if code, body := get(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "partnerapi_build_info") {
			t.Errorf("%s metrics: %d %.200s", name, code, body)
		}
	}
	addr, _ := l.serviceAddr(adminService, servicePort(t, r.service(adminService), "admin"))
	if code, body := get(t, "http://"+addr+adminapi.Prefix+"/openapi.json"); code != http.StatusOK {
		t.Errorf("the admin Service: %d %.200s", code, body)
	}

	// An operator command in a token service pod, as NOTES.txt says, makes
	// the client the helm test pod uses.
	l.run(authserver, "orgs", "create", "--slug", "helm-test", "--name", "Helm test", "--environment", "sandbox", "--json")
	var client struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	out := l.run(authserver, "clients", "create", "--org", "helm-test", "--name", "helm test", "--audience", "hospital", "--scopes", "events.subscribe", "--json")
	if err := json.Unmarshal(out, &client); err != nil || client.ID == "" {
		t.Fatalf("clients create: %q (%v)", out, err)
	}
	// The Secret an operator makes for tests.credentialsSecret.
	l.secrets["partner-sandbox"] = map[string][]byte{"client_id": []byte(client.ID), "client_secret": []byte(client.Secret)}
	runTestPod(t, l, client.ID)

	// SIGTERM, as the kubelet sends it after the preStop sleep.
	for name, p := range procs {
		spec := r.deployment(name).Spec.Template.Spec
		budget := time.Duration(*spec.TerminationGracePeriodSeconds-spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds) * time.Second
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		took := testwait.Eventually(t, budget, name+" exits on SIGTERM", func() bool { return !p.Running() })
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s exited %d on SIGTERM:\n%s", name, code, p.Tail(2000))
		}
		t.Logf("%s: exit %v after SIGTERM (budget %v)", name, took.Round(time.Millisecond), budget)
	}
}

// runTestPod runs the helm test pod's container: its command and
// arguments with its environment, Services mapped to this machine.
func runTestPod(t *testing.T, l *loopback, clientID string) {
	t.Helper()
	if len(l.r.Pods) != 1 {
		t.Fatalf("%d test pods", len(l.r.Pods))
	}
	argv, env := l.command(l.r.Pods[0].Name, l.r.Pods[0].Spec)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the helm test pod's script: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"client_id":"`+clientID+`"`) {
		t.Errorf("the helm test pod's /api/v1/me/ answered %s, not the client's", out)
	}
}

// servicePort is the port number of the Service's port called name.
func servicePort(t *testing.T, s *corev1.Service, name string) int32 {
	t.Helper()
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return p.Port
		}
	}
	t.Fatalf("Service %s has no port %s", s.Name, name)
	return 0
}
