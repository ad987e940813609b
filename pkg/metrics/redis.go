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
// missing key (redis.Nil) is an answer, not an error, and neither is the
// NOSCRIPT that go-redis's Script.Run answers itself by loading the script.
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
		h.observe("pipeline", start, err)
		return err
	}
}

func (h redisHook) observe(command string, start time.Time, err error) {
	h.m.redisDuration.WithLabelValues(command).Observe(since(start))
	if err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		h.m.redisErrors.WithLabelValues(command).Inc()
	}
}
