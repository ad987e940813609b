package main

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/logging"
)

// quietRedis silences go-redis's own log lines for commands other than
// serve; serve sends them through its JSON logger (logRedis). go-redis
// v9.23 has one process-wide logger and no per-client option, hence
// redis.SetLogger, set from run's injected writer (it is atomic).
func quietRedis() { redis.SetLogger(logging.Printf(nil)) }

// logRedis sends go-redis's log lines through logger as records of
// component "redis".
func logRedis(logger *slog.Logger) {
	redis.SetLogger(logging.Printf(logger.With(slog.String("component", "redis"))))
}
