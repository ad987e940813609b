package clients

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// UsageMinutes is how many minutes of each client's usage its history
// keeps: the operator console's hour.
const UsageMinutes = 60

// usageBatch bounds the clients one pipeline of RecordUsage reads or
// writes, so that a large registry is sampled in pieces of bounded memory.
const usageBatch = 500

// usageTTL is how long a client's usage history lives after its last
// recorded minute: its hour, and a margin.
const usageTTL = 2 * time.Hour

// MinuteUsage is one minute of a client's use: the API and token requests
// its limits counted in the minute that ended at End.
type MinuteUsage struct {
	End        time.Time
	API, Token int64
}

// UsageHistory is a client's last UsageMinutes minutes, oldest first, the
// last one the minute that ended at or before now; a minute nobody
// recorded (no request, or no sampler running) reads as zero.
type UsageHistory struct {
	Minutes []MinuteUsage
}

// RecordUsage records, once per minute across every replica, each
// client's API and token requests of the minute that ends at now's minute
// (what its rate-limit windows count: Usage). The replica that takes the
// minute's lease ({usage}:sample:MINUTE, SET NX) reads the registry's
// client ids, every client's windows and writes a field of
// {CLIENT_ID}:usage for each client that made a request; the others do
// nothing. It reports whether this call recorded the minute.
//
// It reads what the token, introspection and /me paths already count and
// runs beside them, on a timer (SampleUsage): those paths make no more
// round trips and run no more Lua for it.
func (s *Store) RecordUsage(ctx context.Context, now time.Time) (bool, error) {
	minute := now.Unix() / 60
	took, err := s.rdb.SetNX(ctx, s.usageSampleKey(minute), "1", 2*time.Minute).Result()
	if err != nil || !took {
		return false, err
	}
	ids, err := s.allClientIDs(ctx)
	if err != nil {
		return false, err
	}
	field, end := strconv.FormatInt(minute%UsageMinutes, 10), strconv.FormatInt(minute, 10)
	for len(ids) > 0 {
		batch := ids[:min(usageBatch, len(ids))]
		ids = ids[len(batch):]
		us, err := s.Usage(ctx, batch, now)
		if err != nil {
			return false, err
		}
		pipe := s.rdb.Pipeline()
		for i, id := range batch {
			api, token := total(us[i].API.PerBucket), total(us[i].Token.PerBucket)
			if api == 0 && token == 0 {
				continue
			}
			key := s.usageKey(id)
			pipe.HSet(ctx, key, field, end+" "+strconv.FormatInt(api, 10)+" "+strconv.FormatInt(token, 10))
			pipe.Expire(ctx, key, usageTTL)
		}
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// total sums a window's per-second counts: the requests of the minute
// that ends now.
func total(per []int64) int64 {
	var n int64
	for _, c := range per {
		n += c
	}
	return n
}

// allClientIDs is every organisation's client ids.
func (s *Store) allClientIDs(ctx context.Context) ([]string, error) {
	slugs, err := s.rdb.SMembers(ctx, s.orgIndex()).Result()
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(slugs))
	for i, slug := range slugs {
		cmds[i] = pipe.SMembers(ctx, s.orgClients(slug))
	}
	if len(slugs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	var ids []string
	for _, c := range cmds {
		ids = append(ids, c.Val()...)
	}
	return ids, nil
}

// UsageHistory reads each client's last UsageMinutes minutes as of now
// (one HGETALL per client, in one pipeline). An id that is not a client
// id, or a client with no recorded minute, reads as an hour of zeros.
func (s *Store) UsageHistory(ctx context.Context, ids []string, now time.Time) ([]UsageHistory, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	pipe := s.rdb.Pipeline()
	for i, id := range ids {
		if ValidClientID(id) {
			cmds[i] = pipe.HGetAll(ctx, s.usageKey(id))
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	last := now.Unix() / 60
	out := make([]UsageHistory, len(ids))
	for i, cmd := range cmds {
		h := UsageHistory{Minutes: make([]MinuteUsage, UsageMinutes)}
		for j := range h.Minutes {
			h.Minutes[j].End = time.Unix((last-UsageMinutes+1+int64(j))*60, 0).UTC()
		}
		if cmd != nil {
			for _, v := range cmd.Val() {
				m, err := parseMinute(v)
				if err != nil {
					continue // a field of another layout reads as no use
				}
				if j := m.End.Unix()/60 - (last - UsageMinutes + 1); j >= 0 && j < UsageMinutes {
					h.Minutes[j] = m
				}
			}
		}
		out[i] = h
	}
	return out, nil
}

// parseMinute reads a {CLIENT_ID}:usage field's value, "MINUTE API TOKEN"
// (MINUTE the Unix minute the counts end at).
func parseMinute(v string) (MinuteUsage, error) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return MinuteUsage{}, fmt.Errorf("usage minute %q", v)
	}
	var n [3]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || x < 0 {
			return MinuteUsage{}, fmt.Errorf("usage minute %q", v)
		}
		n[i] = x
	}
	return MinuteUsage{End: time.Unix(n[0]*60, 0).UTC(), API: n[1], Token: n[2]}, nil
}

// SampleUsage calls RecordUsage a second after every minute's start until
// ctx ends (the token service runs it while its console is on). A failed
// sample is logged and the minute left unrecorded; the next minute tries
// again.
func (s *Store) SampleUsage(ctx context.Context, log *slog.Logger, now func() time.Time) {
	for {
		t := now()
		next := t.Truncate(time.Minute).Add(time.Minute + time.Second)
		timer := time.NewTimer(next.Sub(t))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if _, err := s.RecordUsage(ctx, now()); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "usage history: minute not recorded", "err", err)
		}
	}
}
