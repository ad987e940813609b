package otlptracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/partnerapi/authplatform/pkg/tracing"
)

// env is getenv of the variables of kv (name, value pairs) alone.
func env(kv ...string) func(string) string {
	return func(name string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == name {
				return kv[i+1]
			}
		}
		return ""
	}
}

// TestOpenClose: Open dials nothing (an exporter connects on its first
// export), so a server starts whether or not its collector is up; off
// opens nothing; Close of both is clean.
func TestOpenClose(t *testing.T) {
	for _, protocol := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		cfg, err := tracing.ParseConfig(env(tracing.EnvEndpoint, "http://127.0.0.1:1", tracing.EnvProtocol, protocol), "authserver")
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Open(context.Background(), cfg, "v1.2.3", nil)
		if err != nil || tr == nil {
			t.Fatalf("%s: Open: %v, %v", protocol, tr, err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("%s: Close: %v", protocol, err)
		}
	}
	off, err := tracing.ParseConfig(env(), "authserver")
	if err != nil || off.On {
		t.Fatalf("no endpoint: %+v %v", off, err)
	}
	if tr, err := Open(context.Background(), off, "", nil); tr != nil || err != nil {
		t.Errorf("off: Open returned %v, %v", tr, err)
	}
}

// TestSampler: each OTEL_TRACES_SAMPLER value is the SDK's sampler of
// that name (the specification's), the default parent-based always-on.
func TestSampler(t *testing.T) {
	for name, want := range map[string]sdktrace.Sampler{
		"always_on":                sdktrace.AlwaysSample(),
		"always_off":               sdktrace.NeverSample(),
		"traceidratio":             sdktrace.TraceIDRatioBased(0.25),
		"parentbased_always_on":    sdktrace.ParentBased(sdktrace.AlwaysSample()),
		"parentbased_always_off":   sdktrace.ParentBased(sdktrace.NeverSample()),
		"parentbased_traceidratio": sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.25)),
	} {
		cfg, err := tracing.ParseConfig(env(tracing.EnvEndpoint, "http://127.0.0.1:1", tracing.EnvSampler, name, tracing.EnvSamplerArg, "0.25"), "authserver")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := sampler(cfg).Description(); got != want.Description() {
			t.Errorf("%s: sampler %q, want %q", name, got, want.Description())
		}
	}
}
