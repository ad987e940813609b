//go:build unix

package helm

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSchema checks that wrong values fail at install: helm template
// refuses each with the schema's error, before rendering anything.
func TestSchema(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]string{
		"a misspelt key":             "authserver: {autoscalling: {enabled: true}}\n",
		"an unknown top key":         "replicas: 3\n",
		"a wrong type":               "resourceserver: {replicas: two}\n",
		"one replica":                "authserver: {replicas: 1}\n",
		"a path in the base":         "publicBaseURL: https://api.example.com/v1\n",
		"no keys":                    "keys: {jwks: ''}\n",
		"keys twice":                 "keys: {existingSecret: mine}\n",
		"no Redis":                   "redis: {url: ''}\n",
		"Redis twice":                "redis: {existingSecret: mine}\n",
		"a node URL for sentinel":    "redis: {topology: sentinel}\n",
		"a sentinel URL for a node":  "redis: {url: 'redis://s:26379/0?master_name=m'}\n",
		"a node URL for cluster":     "redis: {topology: cluster}\n",
		"trial and a URL":            "redis: {trial: {enabled: true}}\n",
		"an unknown topology":        "redis: {topology: replicated}\n",
		"ingress without hosts":      "ingress: {enabled: true}\n",
		"gateway without a parent":   "gateway: {enabled: true}\n",
		"admin open to all":          "networkPolicy: {adminFrom: []}\n",
		"a wrong log level":          "logLevel: verbose\n",
		"an endpoint without scheme": "otel: {endpoint: 'collector:4318'}\n",
		"a sampling ratio above 1":   "otel: {samplingRatio: 5}\n",
		"an unknown OTLP protocol":   "otel: {protocol: http/json}\n",
		"service.name as attribute":  "otel: {resourceAttributes: {service.name: x}}\n",
		"an attribute to encode":     "otel: {resourceAttributes: {team: 'a,b'}}\n",
		"OTLP headers in the values": "otel: {headers: 'api-key=x'}\n",
		"a wrong quantity":           "resourceserver: {resources: {requests: {cpu: lots, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			refused(t, overRequired(t, values))
		})
	}
	t.Run("nothing given", func(t *testing.T) {
		t.Parallel()
		refused(t, "{}")
	})
}

// overRequired is required with override merged over it, as a second
// values file would be.
func overRequired(t *testing.T, override string) string {
	t.Helper()
	var base, over map[string]any
	if err := yaml.Unmarshal([]byte(required), &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(override), &over); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(merge(base, over))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// refused checks helm template refuses values for the schema.
func refused(t *testing.T, values string) {
	t.Helper()
	_, err := runHelm(t, "template", release, chartDir, "--namespace", namespace, "-f", valuesFile(t, values))
	if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
		t.Fatalf("helm template accepted the values, or refused them for another reason: %v\n%s", err, values)
	}
}
