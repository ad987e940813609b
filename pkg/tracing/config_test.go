package tracing

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// off is what ParseConfig reads from an empty environment.
var off = Config{Service: "authserver", Sampler: "parentbased_always_on", SamplerArg: 1, Timeout: 10 * time.Second,
	Protocol: ProtocolHTTP, Endpoint: "http://localhost:4318/v1/traces"}

func with(f func(*Config)) Config {
	c := off
	f(&c)
	return c
}

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want Config
	}{
		{"nothing set: off", nil, off},
		{"an endpoint: on, OTLP/HTTP at its /v1/traces",
			[]string{EnvEndpoint, "http://jaeger:4318/"},
			with(func(c *Config) { c.On, c.Endpoint = true, "http://jaeger:4318/v1/traces" })},
		{"the traces endpoint: as it is, before the base",
			[]string{EnvEndpoint, "http://a:4318", EnvTracesEndpoint, "https://b/otlp/traces"},
			with(func(c *Config) { c.On, c.Endpoint = true, "https://b/otlp/traces" })},
		{"grpc: the endpoint as it is",
			[]string{EnvEndpoint, "http://jaeger:4317", EnvProtocol, "grpc"},
			with(func(c *Config) { c.On, c.Endpoint, c.Protocol = true, "http://jaeger:4317", ProtocolGRPC })},
		{"the traces protocol before the general one",
			[]string{EnvEndpoint, "http://jaeger:4317", EnvProtocol, "http/protobuf", EnvTracesProtocol, "grpc"},
			with(func(c *Config) { c.On, c.Endpoint, c.Protocol = true, "http://jaeger:4317", ProtocolGRPC })},
		{"OTEL_TRACES_EXPORTER=otlp alone: on, the specification's default endpoint",
			[]string{EnvTracesExporter, "otlp"},
			with(func(c *Config) { c.On = true })},
		{"OTEL_SDK_DISABLED=true: off whatever else is set",
			[]string{EnvEndpoint, "http://jaeger:4318", EnvSDKDisabled, "true"},
			with(func(c *Config) { c.Endpoint = "http://jaeger:4318/v1/traces" })},
		{"OTEL_TRACES_EXPORTER=none: off",
			[]string{EnvEndpoint, "http://jaeger:4318", EnvTracesExporter, "none"},
			with(func(c *Config) { c.Endpoint = "http://jaeger:4318/v1/traces" })},
		{"everything else",
			[]string{EnvEndpoint, "https://collector", EnvHeaders, "api-key=abc%3D,x=1", EnvTimeout, "2500",
				EnvCompression, "gzip", EnvSampler, "parentbased_traceidratio", EnvSamplerArg, "0.01",
				EnvServiceName, "token-service", EnvResourceAttrs, "deployment.environment=prod, team=api",
				EnvBSPScheduleDelay, "100", EnvBSPExportTimeout, "3000", EnvBSPMaxQueueSize, "4096", EnvBSPMaxExportBatch, "1024"},
			Config{On: true, Endpoint: "https://collector/v1/traces", Protocol: ProtocolHTTP,
				Headers: map[string]string{"api-key": "abc=", "x": "1"}, Timeout: 2500 * time.Millisecond, Gzip: true,
				Sampler: "parentbased_traceidratio", SamplerArg: 0.01, Service: "token-service",
				Attributes:    [][2]string{{"deployment.environment", "prod"}, {"team", "api"}},
				ScheduleDelay: 100 * time.Millisecond, ExportTimeout: 3 * time.Second, MaxQueueSize: 4096, MaxExportBatch: 1024}},
		{"a sampler argument for a sampler that takes none: ignored",
			[]string{EnvSampler, "always_on", EnvSamplerArg, "0.5"},
			with(func(c *Config) { c.Sampler = "always_on" })},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseConfig(env(c.env...), "authserver")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestParseConfigProblems: every problem at once, each naming its
// variable, even with tracing off; never a header's value.
func TestParseConfigProblems(t *testing.T) {
	_, err := ParseConfig(env(
		EnvSDKDisabled, "maybe",
		EnvTracesExporter, "zipkin",
		EnvProtocol, "http/json",
		EnvTracesEndpoint, "jaeger:4318",
		EnvHeaders, "secret-value-without-key",
		EnvTimeout, "10s",
		EnvCompression, "zstd",
		EnvSampler, "sometimes",
		EnvBSPScheduleDelay, "-1",
		EnvBSPMaxQueueSize, "10", EnvBSPMaxExportBatch, "20",
		EnvResourceAttrs, "a=%zz",
	), "authserver")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{EnvSDKDisabled, EnvTracesExporter, EnvProtocol, EnvTracesEndpoint, EnvHeaders, EnvTimeout,
		EnvCompression, EnvSampler, EnvBSPScheduleDelay, EnvBSPMaxExportBatch, EnvResourceAttrs} {
		if !strings.Contains(msg, want) {
			t.Errorf("no problem names %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret-value") {
		t.Errorf("a header's value is echoed:\n%s", msg)
	}

	_, err = ParseConfig(env(EnvSampler, "traceidratio", EnvSamplerArg, "1.5"), "authserver")
	if err == nil || !strings.Contains(err.Error(), EnvSamplerArg) {
		t.Errorf("ratio 1.5: %v", err)
	}
}
