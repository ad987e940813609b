// Package logging builds the services' structured JSON loggers (log/slog)
// and carries per-request attributes, such as the request id, in the
// context, so that every record logged with a request's context names it.
// Printf adapts a logger to libraries that log with Printf (go-redis), so
// that a service writes one stream of JSON records.
package logging
