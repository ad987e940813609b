// Package otlptracing opens a serving process's tracing (package tracing)
// with its OpenTelemetry SDK provider: an OTLP exporter (gRPC or
// HTTP/protobuf, tracing.Config.Protocol) behind a batch span processor,
// the sampler and the resource. Package serverruntime calls Open once per
// server.
//
// It is a package of its own so that only the server binaries link the
// exporters and gRPC: the packages that start spans import package tracing
// alone, and so do their test binaries, which no longer link gRPC's
// packages (deploy/docs/testing.md, "What keeps the suite quick").
package otlptracing
