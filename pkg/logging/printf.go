package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Printf adapts a logger to libraries that log with Printf(ctx, format,
// args) (go-redis's redis.SetLogger): each line becomes one record of l, at
// warning level when it reports a failure and at info level otherwise, so
// that a service writes one stream of JSON records. A nil l discards
// everything: for commands that report the library's failures themselves.
func Printf(l *slog.Logger) PrintfLogger { return PrintfLogger{l} }

// PrintfLogger is a Printf-style logger writing to a slog.Logger.
type PrintfLogger struct{ l *slog.Logger }

// Printf logs one formatted line.
func (p PrintfLogger) Printf(ctx context.Context, format string, v ...any) {
	if p.l == nil {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	level := slog.LevelInfo
	if lower := strings.ToLower(msg); strings.Contains(lower, "fail") || strings.Contains(lower, "error") {
		level = slog.LevelWarn
	}
	p.l.Log(ctx, level, msg)
}
