package clients

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Usage is what a client's rate limits count now.
type Usage struct {
	API   ratelimit.Window
	Token ratelimit.Window
}

// Usage reads what the rate limiter keeps of each client's API and token
// requests, as of now: one MGET of a client's two window keys (they share
// its hash tag), all of them in one pipeline. It counts nothing and writes
// nothing, so the token, introspection and /me paths do no more work for
// it. An id that is not a client id reads as no use.
func (s *Store) Usage(ctx context.Context, ids []string, now time.Time) ([]Usage, error) {
	out := make([]Usage, len(ids))
	cmds := make([]*redis.SliceCmd, len(ids))
	pipe := s.rdb.Pipeline()
	for i, id := range ids {
		if ValidClientID(id) {
			cmds[i] = pipe.MGet(ctx, s.apiLogKey(id), s.tokenLogKey(id))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		vals := cmd.Val()
		str := func(j int) string {
			if j < len(vals) {
				if v, ok := vals[j].(string); ok {
					return v
				}
			}
			return ""
		}
		out[i] = Usage{API: ratelimit.ReadWindow(str(0), now, Window), Token: ratelimit.ReadWindow(str(1), now, Window)}
	}
	return out, nil
}
