package redisconn

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/logging"
)

// SetLogger sends go-redis's own log lines (pool dial failures, Sentinel
// choices) through logger, as records of component "redis", for a serving
// process that writes one stream of JSON records. A nil logger silences
// them, for commands that report a Redis failure themselves in one line
// ("cannot reach Redis ...").
//
// go-redis v9.23 has one process-wide logger and no per-client option,
// hence redis.SetLogger: the binaries call this from run, with the logger
// built from run's injected writer. It is atomic, so concurrent runs in
// tests only race for whose logger wins, not for memory.
func SetLogger(logger *slog.Logger) {
	if logger == nil {
		redis.SetLogger(logging.Printf(nil))
		return
	}
	redis.SetLogger(logging.Printf(logger.With(slog.String("component", "redis"))))
}

// KeyPrefixEnv is the environment variable whose value starts every Redis
// key of a process (deployments sharing one Redis, tests).
const KeyPrefixEnv = "REDIS_KEY_PREFIX"

// KeyPrefix reads KeyPrefixEnv through getenv: the one way the servers,
// the operator commands and the local stack read it, once per process.
func KeyPrefix(getenv func(string) string) string { return getenv(KeyPrefixEnv) }
