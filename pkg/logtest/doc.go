// Package logtest is test support for code that logs: Sink, a log
// destination that many goroutines may write to while a test reads it,
// with the JSON records of log/slog (logging.New) read back as maps. It is
// imported by tests only, as net/http/httptest is.
package logtest
