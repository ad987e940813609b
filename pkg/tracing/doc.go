// Package tracing is the servers' OpenTelemetry tracing, opened once per
// serving process by package serverruntime (with package otlptracing's
// exporters, which are not linked here): off unless an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER=otlp, and configured by the OpenTelemetry
// specification's OTEL_* environment variables alone (ParseConfig: the
// protocol, grpc or http/protobuf, the sampler, the service name and
// resource attributes, the batch span processor, OTEL_SDK_DISABLED), read
// through the injected getenv and checked with the other settings, so that
// a mistyped value fails the start instead of being ignored.
//
// Off, a server holds a nil *Tracing: its base layer starts no span
// (httpserver.Base.Tracing), its Redis client carries no tracing hook, and
// Start, which the servers' own steps call, costs one context lookup and no
// allocation (BenchmarkTokenEndpoint's allocs/op are the same as without
// the package).
//
// On, each request runs in a server span (StartRequest, EndRequest) named
// after its route, never its raw path; the W3C traceparent of a trusted
// proxy only (package clientip) is continued, so the edge starts the trace
// and a caller cannot choose one. Its children are the signature
// (SpanSign), a token's signature check (SpanVerify), a jwks_uri fetch
// (SpanJWKSURIFetch) and the Redis commands, through go-redis's own hook
// (redisotel, InstrumentRedis) with no command's arguments. No span holds
// a token, a secret, a client assertion or a client id: the attributes are
// the method, the route, the status, the request id and a jwks_uri's host
// (deploy/docs/tracing.md). The trace id of a sampled request is in its
// access record (trace_id).
package tracing
