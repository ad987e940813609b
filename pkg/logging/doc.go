// Package logging builds the services' structured JSON loggers (log/slog)
// and carries per-request attributes, such as the request id, in the
// context, so that every record logged with a request's context names it.
package logging
