//go:build unix

package helm

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// servedPaths are the paths each server serves (its routes list), by the
// server that serves them.
var servedPaths = map[string][]string{
	authserver:     {tokenserver.PathToken, tokenserver.PathIntrospect, tokenserver.PathRevoke, tokenserver.PathJWKS, tokenserver.PathMetadata},
	resourceserver: {"/api/v1/me/", "/api/v1/schema/", "/llms.txt", "/llms-full.txt", "/docs/quickstart.md", "/healthz", "/readyz"},
}

// edgePaths are the paths whose routing the edge and the chart must agree
// on: every served path, and the edges of the prefixes (the prefix itself
// without its slash, a longer element, a path without its slash), and the
// admin API's, which the public route must never reach. Paths differing
// only in case are left out: Caddy's path matcher folds case, Kubernetes'
// and Gateway API's do not; no server serves such a path, both answer 404.
func edgePaths() []string {
	paths := append([]string{}, servedPaths[authserver]...)
	paths = append(paths, servedPaths[resourceserver]...)
	return append(paths,
		"/", "/api/v1/oauth", "/api/v1/oauth/", "/api/v1/oauthx", "/api/v1/oauthx/token/", "/api/v1/oauth/token",
		"/api/v1/oauth/unknown/deeper", "/.well-known", "/.well-known/", "/.well-knownx", "/.well-known/openid-configuration",
		"/api/v1", "/api/v1/", "/api/v1/me", "/api", "/metrics", "/nowhere",
		adminapi.Prefix+"/orgs", adminapi.Prefix+"/openapi.json",
	)
}

// route is one public route of the chart: a path, exact or a prefix, to a
// Service.
type route struct {
	path    string
	exact   bool
	service string
}

// ingressRoutes are the Ingress's routes for host.
func ingressRoutes(t *testing.T, r *rendered, host string) []route {
	t.Helper()
	var out []route
	for _, ing := range r.Ingresses {
		for _, rule := range ing.Spec.Rules {
			if rule.Host != host || rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				if p.PathType == nil || p.Backend.Service == nil {
					t.Fatalf("Ingress path %s without a type or a Service", p.Path)
				}
				out = append(out, route{path: p.Path, exact: string(*p.PathType) == "Exact", service: p.Backend.Service.Name})
			}
		}
	}
	return out
}

// httpRoutes are the HTTPRoute's routes.
func httpRoutes(t *testing.T, r *rendered) []route {
	t.Helper()
	var out []route
	for _, hr := range r.HTTPRoutes {
		for _, rule := range hr.Spec.Rules {
			if len(rule.BackendRefs) != 1 {
				t.Fatalf("HTTPRoute rule with %d backends", len(rule.BackendRefs))
			}
			for _, m := range rule.Matches {
				if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
					t.Fatalf("HTTPRoute match without a path")
				}
				out = append(out, route{path: *m.Path.Value, exact: string(*m.Path.Type) == "Exact", service: string(rule.BackendRefs[0].Name)})
			}
		}
	}
	return out
}

// prefixMatch is Kubernetes' and Gateway API's path prefix: whole path
// elements, a trailing slash of the prefix ignored.
func prefixMatch(prefix, path string) bool {
	p := strings.TrimSuffix(prefix, "/")
	return p == "" || path == p || strings.HasPrefix(path, p+"/")
}

// ingressBackend is the Service an Ingress sends path to: the longest
// matching path, and between equally long ones Exact before Prefix
// (networking.k8s.io/v1, "Multiple matches").
func ingressBackend(routes []route, path string) string {
	best, bestLen, bestExact := "", -1, false
	for _, r := range routes {
		if (r.exact && r.path != path) || (!r.exact && !prefixMatch(r.path, path)) {
			continue
		}
		if n := len(strings.TrimSuffix(r.path, "/")); n > bestLen || (n == bestLen && r.exact && !bestExact) {
			best, bestLen, bestExact = r.service, n, r.exact
		}
	}
	return best
}

// gatewayBackend is the Service an HTTPRoute sends path to: an Exact
// match first, then the longest prefix (HTTPRouteRule's precedence).
func gatewayBackend(routes []route, path string) string {
	for _, r := range routes {
		if r.exact && r.path == path {
			return r.service
		}
	}
	best, bestLen := "", -1
	for _, r := range routes {
		if !r.exact && prefixMatch(r.path, path) && len(r.path) > bestLen {
			best, bestLen = r.service, len(r.path)
		}
	}
	return best
}

// checkPublicRoutes checks the Ingress and the HTTPRoute name the servers'
// Services on their http port, never the admin Service.
func checkPublicRoutes(t *testing.T, r *rendered, c chartCase) {
	t.Helper()
	if got := len(r.Ingresses); got != map[bool]int{true: 1, false: 0}[c.ingress] {
		t.Errorf("%d Ingresses", got)
	}
	if got := len(r.HTTPRoutes); got != map[bool]int{true: 1, false: 0}[c.gateway] {
		t.Errorf("%d HTTPRoutes", got)
	}
	for _, ing := range r.Ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				s := r.service(p.Backend.Service.Name)
				if s == nil || s.Name == adminService || p.Backend.Service.Port.Name != "http" {
					t.Errorf("Ingress %s routes %s to %+v: want a server's http port", ing.Name, p.Path, p.Backend.Service)
				}
			}
		}
	}
	for _, hr := range r.HTTPRoutes {
		for _, rule := range hr.Spec.Rules {
			for _, b := range rule.BackendRefs {
				s := r.service(string(b.Name))
				if s == nil || s.Name == adminService || b.Port == nil || servicePortName(s, int32(*b.Port)) != "http" {
					t.Errorf("HTTPRoute %s routes to %s port %v: want a server's http port", hr.Name, b.Name, b.Port)
				}
			}
		}
	}
}

func servicePortName(s *corev1.Service, port int32) string {
	for _, p := range s.Spec.Ports {
		if p.Port == port {
			return p.Name
		}
	}
	return ""
}

// TestRoutesAgreeWithEdge sends every path of edgePaths through the real
// Caddy running deploy/Caddyfile (its static mode, as deploy/e2e/topology
// runs it), in front of two stand-ins that say which pool they are, and
// checks that the chart's Ingress and HTTPRoute, as Kubernetes and Gateway
// API match paths, send each path to the same server.
func TestRoutesAgreeWithEdge(t *testing.T) {
	t.Parallel()
	e2etest.RequireCommand(t, "caddy")
	r := template(t, required+`
ingress: {enabled: true, hosts: [api.example.com]}
gateway: {enabled: true, parentRefs: [{name: public}]}
`)
	ingress, gateway := ingressRoutes(t, r, "api.example.com"), httpRoutes(t, r)
	if len(ingress) == 0 || len(gateway) == 0 {
		t.Fatalf("no routes: Ingress %v, HTTPRoute %v", ingress, gateway)
	}
	pool := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Pool", name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	auth, res := pool(authserver), pool(resourceserver)
	port := redistest.FreePort(t)
	startEdge(t, port, strings.TrimPrefix(auth.URL, "http://"), strings.TrimPrefix(res.URL, "http://"))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	e2etest.WaitOK(t, base+"/healthz")

	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range edgePaths() {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s through the edge: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		edge := resp.Header.Get("X-Pool")
		if edge == "" {
			t.Fatalf("GET %s: the edge answered %s itself", path, resp.Status)
		}
		if got := ingressBackend(ingress, path); got != edge {
			t.Errorf("%s: the edge routes it to %s, the Ingress to %q", path, edge, got)
		}
		if got := gatewayBackend(gateway, path); got != edge {
			t.Errorf("%s: the edge routes it to %s, the HTTPRoute to %q", path, edge, got)
		}
	}
	for name, paths := range servedPaths {
		for _, path := range paths {
			if got := ingressBackend(ingress, path); got != name {
				t.Errorf("%s is served by %s, the Ingress routes it to %q", path, name, got)
			}
		}
	}
}

// startEdge runs caddy with deploy/Caddyfile on 127.0.0.1:port, its
// static upstreams the given host:port.
func startEdge(t *testing.T, port int, auth, resource string) {
	t.Helper()
	home := t.TempDir()
	out, err := exec.Command("caddy", "version").Output()
	if err != nil {
		t.Fatalf("caddy version: %v", err)
	}
	// The Caddyfile's directive for retried bodies differs in Caddy 2.6
	// (Debian bookworm's): CADDY_COMPAT picks it.
	compat := "current"
	if strings.HasPrefix(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "2.6.") {
		compat = "2.6"
	}
	env := append(e2etest.BaseEnv(home),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"CADDY_ADMIN=off",
		"EDGE_BIND=127.0.0.1",
		"EDGE_PORT="+strconv.Itoa(port),
		"UPSTREAMS=static",
		"AUTH_UPSTREAMS="+auth,
		"RESOURCE_UPSTREAMS="+resource,
		"CADDY_COMPAT="+compat,
	)
	caddyfile := filepath.Join(e2etest.RepoRoot(t), "deploy", "Caddyfile")
	if _, err := os.Stat(caddyfile); err != nil {
		t.Fatal(err)
	}
	e2etest.StartProcess(t, "edge", env, "caddy", "run", "--config", caddyfile, "--adapter", "caddyfile")
}
