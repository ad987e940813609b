package clients

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// Store is the registry in Redis. It is safe for concurrent use.
type Store struct {
	rdb redis.UniversalClient
	// pipe, when set (UseAutoPipeline), runs the per-request scripts
	// (Authenticate, AdmitAPI) in go-redis's automatic pipeliner; a
	// caller waits for one at most budget.
	pipe luascript.Submitter
	// rerun, when set (a Cluster's PrimaryPipes.Failed), says whether a
	// script that failed through pipe runs again on rdb.
	rerun func(context.Context, error) bool
	// closePipe, when set (a Cluster's PrimaryPipes.Close), closes what
	// pipe opened beside rdb.
	closePipe func() error
	// traced (TraceSampled) runs a traced request's script on rdb.
	traced bool
	budget time.Duration
	waits  *waitEpochs
	prefix string
	now    func() time.Time
	// confirm is what every operator change waits for (see ConfirmWrites).
	confirm redisconn.Confirmation
}

// ConfirmWrites makes every operator change (creating an organisation or a
// client, rotating a secret, revoking, setting a limit) wait until
// c.Replicas replicas of the primary that holds it have acknowledged it
// (Redis WAIT), for at most c.Timeout. A change they do not confirm in
// time is on the primary but may be undone by a failover, since Redis
// replicates asynchronously: it is returned with an error wrapping
// ErrNotReplicated, never reported as done. Call it before the Store is
// used; c.Replicas 0 (the default) confirms nothing.
func (s *Store) ConfirmWrites(c redisconn.Confirmation) { s.confirm = c }

// NewStore returns a Store whose keys all start with prefix ("" in
// production; tests isolate themselves with their own). now is the clock
// (nil: time.Now) used for timestamps.
func NewStore(rdb redis.UniversalClient, prefix string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, prefix: prefix, now: now}
}

// write runs a write script on the primary of keys[0]'s slot and, when the
// Store confirms writes, waits there for the replicas (ConfirmWrites). It
// returns what the replicas said; a script's own error is an error. A
// write met by a failover is tried again (redisconn.ConfirmedWrite),
// so every write script tolerates running more than once.
func (s *Store) write(ctx context.Context, script *luascript.Script, keys []string, args ...any) (*redis.Cmd, redisconn.Ack, error) {
	if s.confirm.Replicas == 0 {
		cmd := script.Run(ctx, s.rdb, keys, args...)
		return cmd, redisconn.Ack{Connected: -1}, cmd.Err()
	}
	var cmd *redis.Cmd
	ack, err := redisconn.ConfirmedWrite(ctx, s.rdb, keys[0], s.confirm, func(p redis.Pipeliner) {
		// EVAL, not EVALSHA: a pipeline cannot fall back on NOSCRIPT.
		cmd = script.Eval(ctx, p, keys, args...)
	})
	if cmd != nil {
		script.Translate(cmd)
	}
	if cmd != nil && cmd.Err() != nil && err == nil {
		return cmd, ack, cmd.Err()
	}
	if err != nil {
		return nil, ack, err
	}
	return cmd, ack, nil
}

// confirmed reports whether every ack met the Store's confirmation.
func (s *Store) confirmed(acks ...redisconn.Ack) bool {
	if s.confirm.Replicas == 0 {
		return true
	}
	for _, a := range acks {
		if !a.Confirmed(s.confirm) {
			return false
		}
	}
	return true
}

// notReplicated is the error of a change the replicas did not confirm; it
// says how many replicas acknowledged and how many the primary has.
func (s *Store) notReplicated(what string, acks ...redisconn.Ack) error {
	worst := redisconn.Ack{Acknowledged: int64(s.confirm.Replicas), Connected: -1}
	for _, a := range acks {
		if !a.Confirmed(s.confirm) && (worst.Confirmed(s.confirm) || a.Acknowledged < worst.Acknowledged) {
			worst = a
		}
	}
	return &NotReplicatedError{What: what, Detail: worst.Describe(s.confirm)}
}

// NotReplicatedError is a change written on the Redis primary that fewer
// replicas than required acknowledged in time: it took effect, but a
// failover could still undo it. errors.Is(err, ErrNotReplicated) holds.
type NotReplicatedError struct {
	What   string // the change: "rotate client svc_..."
	Detail string // what the replicas said (redisconn.Ack.Describe)
}

func (e *NotReplicatedError) Error() string { return e.Public() }

// Public says what happened in words fit for the caller who asked for the
// change (the warning of the admin API's 202): what changed and what the
// replicas said, nothing else.
func (e *NotReplicatedError) Public() string {
	return e.What + ": " + ErrNotReplicated.Error() + ": " + e.Detail +
		": the change took effect on the primary, but a failover before a replica copies it would undo it"
}

// Unwrap makes errors.Is(err, ErrNotReplicated) hold.
func (e *NotReplicatedError) Unwrap() error { return ErrNotReplicated }

// unavailable marks Redis failures so servers can answer 503.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTime reads a stored time: milliseconds since the epoch, or RFC 3339
// (organisations, and records written before times were stored as
// milliseconds).
func parseTime(s string) time.Time {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC()
	}
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UTC()
}

// IsUnavailable reports whether err means Redis could not be reached or
// answered with an error.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
