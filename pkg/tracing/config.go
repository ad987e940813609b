package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/cli"
)

// The OpenTelemetry environment variables a server reads (the
// OpenTelemetry specification's "Environment Variable Specification" and
// "OTLP Exporter Configuration"), and only these.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvResourceAttrs  = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"

	EnvEndpoint          = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint    = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol          = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol    = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvHeaders           = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders     = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout           = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout     = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvCompression       = "OTEL_EXPORTER_OTLP_COMPRESSION"
	EnvTracesCompression = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"

	EnvBSPScheduleDelay   = "OTEL_BSP_SCHEDULE_DELAY"
	EnvBSPExportTimeout   = "OTEL_BSP_EXPORT_TIMEOUT"
	EnvBSPMaxQueueSize    = "OTEL_BSP_MAX_QUEUE_SIZE"
	EnvBSPMaxExportBatch  = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
	defaultHTTPTracesPath = "/v1/traces"
)

// Variables are every variable ParseConfig reads, for a harness that
// passes them on to the servers it starts (deploy/bench).
var Variables = []string{EnvSDKDisabled, EnvTracesExporter, EnvServiceName, EnvResourceAttrs, EnvSampler, EnvSamplerArg,
	EnvEndpoint, EnvTracesEndpoint, EnvProtocol, EnvTracesProtocol, EnvHeaders, EnvTracesHeaders, EnvTimeout, EnvTracesTimeout,
	EnvCompression, EnvTracesCompression, EnvBSPScheduleDelay, EnvBSPExportTimeout, EnvBSPMaxQueueSize, EnvBSPMaxExportBatch}

// Protocols of the OTLP exporter (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Samplers (OTEL_TRACES_SAMPLER), as the specification names them.
var samplers = []string{"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// Config is the tracing of a server process, read from the OTEL_*
// environment variables by ParseConfig. The zero Config is tracing off.
type Config struct {
	// On: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER=otlp,
	// and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
	On bool
	// Endpoint is the exporter's URL: for http/protobuf the full URL of
	// the traces (the base endpoint with /v1/traces added), for grpc the
	// collector's scheme, host and port (http: without TLS).
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP (the default, as the
	// specification recommends).
	Protocol string
	// Headers are sent with every export (an API key, say): never logged.
	Headers map[string]string
	// Timeout bounds one export (default 10 s).
	Timeout time.Duration
	// Gzip compresses exports (OTEL_EXPORTER_OTLP_COMPRESSION=gzip).
	Gzip bool
	// Sampler is one of the specification's names (default
	// parentbased_always_on); SamplerArg the ratio of the traceidratio
	// samplers (default 1).
	Sampler    string
	SamplerArg float64
	// Service is the service.name (OTEL_SERVICE_NAME, else the binary's
	// default); Attributes the other resource attributes
	// (OTEL_RESOURCE_ATTRIBUTES), in their order.
	Service    string
	Attributes [][2]string
	// The batch span processor's settings (OTEL_BSP_*); zero: the SDK's
	// defaults (5 s, 30 s, 2048, 512).
	ScheduleDelay, ExportTimeout time.Duration
	MaxQueueSize, MaxExportBatch int
}

// ParseConfig reads the tracing configuration through getenv; service is
// the service.name unless OTEL_SERVICE_NAME says otherwise. A variable
// that does not parse is a problem even when tracing is off, so that a
// mistyped setting never goes unnoticed; every problem is reported at once
// (errors.Join of cli.UsageError values).
func ParseConfig(getenv func(string) string, service string) (Config, error) {
	var errs []error
	problem := func(format string, a ...any) { errs = append(errs, cli.Usagef(format, a...)) }
	c := Config{Service: service, Sampler: "parentbased_always_on", SamplerArg: 1, Timeout: 10 * time.Second, Protocol: ProtocolHTTP}

	disabled, err := cli.EnvBool(getenv, EnvSDKDisabled, false)
	if err != nil {
		errs = append(errs, err)
	}
	exporter := strings.TrimSpace(getenv(EnvTracesExporter))
	switch exporter {
	case "", "otlp", "none":
	default:
		problem("%s=%q: want otlp or none (the servers export OTLP only)", EnvTracesExporter, exporter)
	}
	base, traces := strings.TrimSpace(getenv(EnvEndpoint)), strings.TrimSpace(getenv(EnvTracesEndpoint))
	c.On = !disabled && exporter != "none" && (base != "" || traces != "" || exporter == "otlp")

	if p := firstOf(getenv, EnvTracesProtocol, EnvProtocol); p != "" {
		switch p {
		case ProtocolGRPC, ProtocolHTTP:
			c.Protocol = p
		default:
			problem("%s=%q: want grpc or http/protobuf", nameOf(getenv, EnvTracesProtocol, EnvProtocol), p)
		}
	}
	switch {
	case traces != "":
		c.Endpoint = traces
	case base != "":
		c.Endpoint = base
		if c.Protocol == ProtocolHTTP {
			c.Endpoint = strings.TrimSuffix(base, "/") + defaultHTTPTracesPath
		}
	default: // the specification's defaults
		c.Endpoint = "http://localhost:4318" + defaultHTTPTracesPath
		if c.Protocol == ProtocolGRPC {
			c.Endpoint = "http://localhost:4317"
		}
	}
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not echoed: a URL may carry credentials.
		problem("%s: want an absolute http or https URL", nameOf(getenv, EnvTracesEndpoint, EnvEndpoint))
	}
	if h := firstOf(getenv, EnvTracesHeaders, EnvHeaders); h != "" {
		var err error
		if c.Headers, err = parsePairs(h); err != nil {
			// The value may hold a key: named, never echoed.
			problem("%s: %v", nameOf(getenv, EnvTracesHeaders, EnvHeaders), err)
		}
	}
	if v := firstOf(getenv, EnvTracesTimeout, EnvTimeout); v != "" {
		if ms, ok := millis(v); ok && ms > 0 {
			c.Timeout = ms
		} else {
			problem("%s=%q: want a positive number of milliseconds", nameOf(getenv, EnvTracesTimeout, EnvTimeout), v)
		}
	}
	switch v := firstOf(getenv, EnvTracesCompression, EnvCompression); v {
	case "", "none":
	case "gzip":
		c.Gzip = true
	default:
		problem("%s=%q: want gzip or none", nameOf(getenv, EnvTracesCompression, EnvCompression), v)
	}
	c.parseSampler(getenv, problem)
	if s := strings.TrimSpace(getenv(EnvServiceName)); s != "" {
		c.Service = s
	}
	if v := getenv(EnvResourceAttrs); v != "" {
		pairs, err := parseOrderedPairs(v)
		if err != nil {
			problem("%s: %v", EnvResourceAttrs, err)
		}
		c.Attributes = pairs
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvBSPScheduleDelay, &c.ScheduleDelay}, {EnvBSPExportTimeout, &c.ExportTimeout}} {
		if v := getenv(d.name); v != "" {
			if ms, ok := millis(v); ok && ms > 0 {
				*d.dst = ms
			} else {
				problem("%s=%q: want a positive number of milliseconds", d.name, v)
			}
		}
	}
	for _, n := range []struct {
		name string
		dst  *int
	}{{EnvBSPMaxQueueSize, &c.MaxQueueSize}, {EnvBSPMaxExportBatch, &c.MaxExportBatch}} {
		if v := getenv(n.name); v != "" {
			if i, err := strconv.Atoi(v); err == nil && i > 0 {
				*n.dst = i
			} else {
				problem("%s=%q: want a positive whole number", n.name, v)
			}
		}
	}
	if c.MaxQueueSize > 0 && c.MaxExportBatch > c.MaxQueueSize {
		problem("%s (%d) must not exceed %s (%d)", EnvBSPMaxExportBatch, c.MaxExportBatch, EnvBSPMaxQueueSize, c.MaxQueueSize)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseSampler reads OTEL_TRACES_SAMPLER and its argument: a ratio in
// [0, 1] for the traceidratio samplers (the specification's default 1).
func (c *Config) parseSampler(getenv func(string) string, problem func(string, ...any)) {
	if s := strings.TrimSpace(getenv(EnvSampler)); s != "" {
		known := false
		for _, k := range samplers {
			known = known || s == k
		}
		if !known {
			problem("%s=%q: want one of %s", EnvSampler, s, strings.Join(samplers, ", "))
			return
		}
		c.Sampler = s
	}
	arg := strings.TrimSpace(getenv(EnvSamplerArg))
	if arg == "" || !strings.HasSuffix(c.Sampler, "traceidratio") {
		return
	}
	r, err := strconv.ParseFloat(arg, 64)
	if err != nil || r < 0 || r > 1 {
		problem("%s=%q: want a ratio from 0 to 1 for %s", EnvSamplerArg, arg, c.Sampler)
		return
	}
	c.SamplerArg = r
}

// firstOf is the first of the variables that is set, trimmed.
func firstOf(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// nameOf is the first of the variables that is set (for a message), else
// the last, the general one.
func nameOf(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if strings.TrimSpace(getenv(n)) != "" {
			return n
		}
	}
	return names[len(names)-1]
}

// millis reads a whole number of milliseconds, as every OTEL_* duration
// is given.
func millis(v string) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n > int64(time.Hour/time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// parsePairs reads a W3C Baggage-like list "key1=value1,key2=value2"
// (values percent-decoded), as OTEL_EXPORTER_OTLP_HEADERS is written.
func parsePairs(v string) (map[string]string, error) {
	pairs, err := parseOrderedPairs(v)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	return m, nil
}

func parseOrderedPairs(v string) ([][2]string, error) {
	var out [][2]string
	for i, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d: want key=value", i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): the value is not percent-encoded properly", i+1, k)
		}
		out = append(out, [2]string{k, dec})
	}
	return out, nil
}
