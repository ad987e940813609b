package otlptracing

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/partnerapi/authplatform/pkg/tracing"
)

// Open returns the tracing cfg describes, or nil when cfg is off: an OTLP
// exporter (grpc or http/protobuf) behind a batch span processor, the
// sampler and the resource (service.name, service.version, the
// OTEL_RESOURCE_ATTRIBUTES). Export failures are logged to logger (the
// SDK's process-wide error handler: this is the one place a serving
// process sets it). Nothing is dialled yet: the exporter connects on its
// first export. Close flushes what is queued.
func Open(ctx context.Context, cfg tracing.Config, version string, logger *slog.Logger) (*tracing.Tracing, error) {
	if !cfg.On {
		return nil, nil
	}
	exp, err := newExporter(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.Service)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	for _, a := range cfg.Attributes {
		if a[0] != "service.name" {
			attrs = append(attrs, attribute.String(a[0], a[1]))
		}
	}
	var bsp []sdktrace.BatchSpanProcessorOption
	if cfg.ScheduleDelay > 0 {
		bsp = append(bsp, sdktrace.WithBatchTimeout(cfg.ScheduleDelay))
	}
	if cfg.ExportTimeout > 0 {
		bsp = append(bsp, sdktrace.WithExportTimeout(cfg.ExportTimeout))
	}
	if cfg.MaxQueueSize > 0 {
		bsp = append(bsp, sdktrace.WithMaxQueueSize(cfg.MaxQueueSize))
	}
	if cfg.MaxExportBatch > 0 {
		bsp = append(bsp, sdktrace.WithMaxExportBatchSize(cfg.MaxExportBatch))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, bsp...),
		sdktrace.WithSampler(sampler(cfg)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	if logger != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("tracing: "+err.Error(), slog.String("component", "tracing"))
		}))
	}
	return tracing.NewClosing(tp, tp.Shutdown), nil
}

// newExporter is the OTLP exporter of cfg.Protocol. The exporters read the
// OTEL_EXPORTER_OTLP_* variables this package does not (certificates,
// client keys) from the process environment themselves; what Config holds
// is given explicitly and wins.
func newExporter(ctx context.Context, cfg tracing.Config) (sdktrace.SpanExporter, error) {
	if cfg.Protocol == tracing.ProtocolGRPC {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(cfg.Endpoint), otlptracegrpc.WithTimeout(cfg.Timeout)}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		if cfg.Gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.Endpoint), otlptracehttp.WithTimeout(cfg.Timeout)}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	if cfg.Gzip {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	}
	return otlptracehttp.New(ctx, opts...)
}

// sampler is the SDK sampler of c.Sampler.
func sampler(c tracing.Config) sdktrace.Sampler {
	switch c.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(c.SamplerArg)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SamplerArg))
	default:
		return sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
}
