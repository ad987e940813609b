//go:build unix

package helm

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// otelCollector is the port the servers reach the OTLP collector on (the
// otel.endpoint URL's, else its scheme's; 0 when tracing is off) and the
// peers otel.networkPeers names.
func otelCollector(t *testing.T, v values) (int32, []networkingv1.NetworkPolicyPeer) {
	t.Helper()
	endpoint := v.string("otel", "endpoint")
	if endpoint == "" {
		return 0, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("otel.endpoint %q: %v", endpoint, err)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, _ := strconv.Atoi(port)
	var peers []networkingv1.NetworkPolicyPeer
	v.decode(t, &peers, "otel", "networkPeers")
	return int32(n), peers
}

// checkTracing checks each server's OTEL_* environment against the otel
// values: none while otel.endpoint is empty; else the endpoint, the
// protocol, a parent-based ratio sampler at otel.samplingRatio, the
// server's service name, the resource attributes (key=value, in key
// order) and the export headers from their Secret, never a value (a
// server's extraEnv, the operator's own, aside).
// TestBinaries and TestTracingExport start the real servers on such an
// environment.
func checkTracing(t *testing.T, r *rendered, v values) {
	t.Helper()
	for _, name := range servers {
		ctr := r.deployment(name).Spec.Template.Spec.Containers[0]
		component := strings.TrimPrefix(name, fullname+"-")
		var extra []corev1.EnvVar // the server's extraEnv, the operator's own
		v.decode(t, &extra, component, "extraEnv")
		got := map[string]string{}
		for _, e := range ctr.Env {
			if !strings.HasPrefix(e.Name, "OTEL_") || slices.ContainsFunc(extra, func(x corev1.EnvVar) bool { return x.Name == e.Name }) {
				continue
			}
			if _, dup := got[e.Name]; dup {
				t.Errorf("%s: %s twice", name, e.Name)
			}
			got[e.Name] = e.Value
			if e.ValueFrom != nil {
				if e.Name != "OTEL_EXPORTER_OTLP_HEADERS" || e.ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s: %s from %+v", name, e.Name, e.ValueFrom)
					continue
				}
				got[e.Name] = "secret " + e.ValueFrom.SecretKeyRef.Name + " " + e.ValueFrom.SecretKeyRef.Key
			}
		}
		want := map[string]string{}
		if endpoint := v.string("otel", "endpoint"); endpoint != "" {
			ratio, _ := v.at("otel", "samplingRatio").(float64)
			want = map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL": v.string("otel", "protocol"),
				"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
				"OTEL_TRACES_SAMPLER_ARG":     strconv.FormatFloat(ratio, 'g', -1, 64),
				"OTEL_SERVICE_NAME":           v.string("otel", "serviceNames", component),
			}
			if attrs, _ := v.at("otel", "resourceAttributes").(map[string]any); len(attrs) > 0 {
				var pairs []string
				for _, k := range slices.Sorted(maps.Keys(attrs)) {
					pairs = append(pairs, k+"="+attrs[k].(string))
				}
				want["OTEL_RESOURCE_ATTRIBUTES"] = strings.Join(pairs, ",")
			}
			if secret := v.string("otel", "headersSecret", "name"); secret != "" {
				want["OTEL_EXPORTER_OTLP_HEADERS"] = "secret " + secret + " " + v.string("otel", "headersSecret", "key")
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: OTEL_* environment %v, want %v", name, got, want)
		}
	}
}

// TestTracingExport starts the real servers on the environment the chart
// renders from an otel block (its endpoint an OTLP/HTTP receiver of the
// test's own, the headers from a Secret) and checks that each exports its
// spans there: POSTs to /v1/traces with the Secret's header, whose
// resource is the service name and the attributes the values give.
func TestTracingExport(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()
	type export struct {
		header  string
		service string
		attrs   map[string]string
	}
	exports := make(chan export, 64)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP/HTTP trace export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			e := export{header: r.Header.Get("X-Api-Key"), attrs: map[string]string{}}
			for _, kv := range rs.GetResource().GetAttributes() {
				e.attrs[kv.Key] = kv.GetValue().GetStringValue()
			}
			e.service = e.attrs["service.name"]
			select {
			case exports <- e:
			default:
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(receiver.Close)

	prefix := redistest.Prefix(t, redistest.Client(t))
	fast := []map[string]string{{"name": "OTEL_BSP_SCHEDULE_DELAY", "value": "100"}} // export within 0.1 s
	vals := map[string]any{
		"publicBaseURL": "http://api.example.test",
		"keys":          map[string]any{"jwks": signingKeys(t)},
		"redis":         map[string]any{"url": redistest.URL(), "keyPrefix": prefix},
		"otel": map[string]any{
			"endpoint":           receiver.URL,
			"samplingRatio":      1,
			"serviceNames":       map[string]any{"authserver": "helm-token", "resourceserver": "helm-api"},
			"resourceAttributes": map[string]any{"deployment.environment.name": "helm-test"},
			"headersSecret":      map[string]any{"name": "otel-headers", "key": "headers"},
		},
		"authserver":     map[string]any{"extraEnv": fast},
		"resourceserver": map[string]any{"extraEnv": fast},
	}
	raw, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	r := template(t, string(raw))
	checkTracing(t, r, parseValues(t, string(raw)))
	l := newLoopback(t, r)
	// The Secret an operator makes for otel.headersSecret.
	l.secrets["otel-headers"] = map[string][]byte{"headers": []byte("x-api-key=t0ken%20one")}
	l.start(authserver)
	l.start(resourceserver)
	for name, path := range map[string]string{authserver: "/.well-known/jwks.json", resourceserver: "/api/v1/me/"} {
		addr, _ := l.serviceAddr(name, servicePort(t, r.service(name), "http"))
		get(t, "http://"+addr+path)
	}
	want := map[string]bool{"helm-token": false, "helm-api": false}
	deadline := time.After(20 * time.Second)
	for slices.Contains(slices.Collect(maps.Values(want)), false) {
		select {
		case e := <-exports:
			if _, ok := want[e.service]; !ok {
				t.Fatalf("an export of service %q, want helm-token or helm-api", e.service)
			}
			if e.header != "t0ken one" || e.attrs["deployment.environment.name"] != "helm-test" {
				t.Fatalf("%s's export: header %q, resource %v", e.service, e.header, e.attrs)
			}
			want[e.service] = true
		case <-deadline:
			t.Fatalf("no export in 20 s from %v", want)
		}
	}
}
