package metrics

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that observes every command's round
// trip and counts failed commands and dials: add it with rdb.AddHook. A
// pipeline's round trip is observed as "pipeline", and each failed command
// in it is counted under its own name, a moment after the pipeline returns. Not errors: a missing key
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
		// Counted once the commands' results can be read, off the
		// pipeline's goroutine. In a batch of go-redis's automatic
		// pipeliner (the deferred face, clients.Store.UseAutoPipeline) a
		// command's result is released when the batch completes, after
		// this hook returns; read here, each command's Err made go-redis
		// find the goroutine's id (runtime.Stack) to tell its dispatcher
		// from a caller: 11.8% of the authserver's CPU under the harness's
		// introspection load (2026-11-27, go-redis v9.23). Read from
		// another goroutine, the first Err waits for the batch and the
		// rest are ready. A copy: go-redis reuses the batch's slice.
		go h.countFailed(slices.Clone(cmds))
		return err
	}
}

// countFailed counts the failed commands of a pipeline, waiting for their
// results if they are not ready yet.
func (h redisHook) countFailed(cmds []redis.Cmder) {
	for _, cmd := range cmds {
		if failed(cmd.Name(), cmd.Err()) {
			h.m.redisErrors.WithLabelValues(cmd.Name()).Inc()
		}
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
