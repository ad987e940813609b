package metrics

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that observes every command's round
// trip and counts failed commands and dials: add it with rdb.AddHook. A
// pipeline's round trip is observed as "pipeline", and each failed command
// in it is counted under its own name. Not errors: a missing key
// (redis.Nil); the NOSCRIPT that go-redis's Script.Run answers itself by
// sending the script; the CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS that
// go-redis sends on every new connection, ignores when refused, and that
// Redis before 7.2 does not know (the services send no CLIENT command).
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m} }

type redisHook struct{ m *Metrics }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.m.redisErrors.WithLabelValues("dial").Inc()
		}
		return conn, err
	}
}

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(cmd.Name(), start, err)
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.m.redisDuration.WithLabelValues("pipeline").Observe(since(start))
		for _, cmd := range cmds {
			if failed(cmd.Name(), cmd.Err()) {
				h.m.redisErrors.WithLabelValues(cmd.Name()).Inc()
			}
		}
		return err
	}
}

func (h redisHook) observe(command string, start time.Time, err error) {
	h.m.redisDuration.WithLabelValues(command).Observe(since(start))
	if failed(command, err) {
		h.m.redisErrors.WithLabelValues(command).Inc()
	}
}

// failed reports whether err of command is a failure worth counting.
func failed(command string, err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), redis.HasErrorPrefix(err, "NOSCRIPT"):
		return false
	case command == "client" && redis.HasErrorPrefix(err, "unknown subcommand"):
		return false
	}
	return true
}
