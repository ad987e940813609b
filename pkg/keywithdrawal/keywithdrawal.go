package keywithdrawal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// DefaultPollInterval is how often a Watcher reads the version when no
// message arrives: the bound on how late a withdrawal is seen when its
// message was lost.
const DefaultPollInterval = 10 * time.Second

// readTimeout bounds one read of the state.
const readTimeout = 2 * time.Second

// ErrNotReplicated: the withdrawal was written on the primary and
// published, but fewer replicas than asked confirmed it (see
// Store.ConfirmWrites); a failover could lose it. Run it again.
var ErrNotReplicated = errors.New("no replica confirmed the withdrawal")

// Store reads and writes the withdrawn kids in Redis.
type Store struct {
	confirm redisconn.Confirmation
	rdb     redis.UniversalClient
	set     string // SET of withdrawn kids
	version string // counter raised by every withdrawal
	channel string // where the new version is published
}

// NewStore returns the store under prefix (every key and the channel start
// with it).
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{
		rdb:     rdb,
		set:     prefix + "{signing-keys}:withdrawn",
		version: prefix + "{signing-keys}:version",
		channel: prefix + "signing-keys:withdrawn",
	}
}

// ConfirmWrites makes Withdraw wait for c.Replicas replicas (WAIT, see
// redisconn.ConfirmedWrite) before it reports success. Call it before the
// Store is used.
func (s *Store) ConfirmWrites(c redisconn.Confirmation) { s.confirm = c }

// State is the set of withdrawn kids at a version.
type State struct {
	Version int64
	Kids    map[string]bool
}

// Withdrawn reports whether kid is withdrawn.
func (s State) Withdrawn(kid string) bool { return s.Kids[kid] }

// Withdraw withdraws kid and tells every Watcher. It returns the new
// version. Withdrawing a kid twice raises the version again (harmless).
func (s *Store) Withdraw(ctx context.Context, kid string) (int64, error) {
	if kid == "" {
		return 0, errors.New("keywithdrawal: empty kid")
	}
	// Both keys share a hash tag, so one connection to one primary runs
	// them (and the WAIT after them). A reader between the two sees the kid
	// at the old version and reads again when the version moves.
	var incr *redis.IntCmd
	ack, err := redisconn.ConfirmedWrite(ctx, s.rdb, s.version, s.confirm, func(p redis.Pipeliner) {
		p.SAdd(ctx, s.set, kid)
		incr = p.Incr(ctx, s.version)
	})
	if err != nil {
		return 0, fmt.Errorf("withdraw key %s: %w", kid, err)
	}
	v := incr.Val()
	// The version key is the safety net: a failed PUBLISH only delays
	// the watchers to their next poll.
	if err := s.rdb.Publish(ctx, s.channel, v).Err(); err != nil {
		return v, &NotifyError{Version: v, Within: DefaultPollInterval, Cause: err}
	}
	if !ack.Confirmed(s.confirm) {
		return v, &NotReplicatedError{Version: v, Detail: ack.Describe(s.confirm)}
	}
	return v, nil
}

// NotReplicatedError is a withdrawal written on the primary and published
// that fewer replicas than asked acknowledged in time:
// errors.Is(err, ErrNotReplicated) holds.
type NotReplicatedError struct {
	Version int64
	Detail  string // what the replicas said (redisconn.Ack.Describe)
}

func (e *NotReplicatedError) Error() string { return e.Public() }

// Public says what happened in words fit for the operator who asked for
// the withdrawal: its version and what the replicas said.
func (e *NotReplicatedError) Public() string {
	return fmt.Sprintf("withdrawn (version %d) on the primary, %s: %s", e.Version, e.Detail, ErrNotReplicated)
}

// Unwrap makes errors.Is(err, ErrNotReplicated) hold.
func (e *NotReplicatedError) Unwrap() error { return ErrNotReplicated }

// NotifyError is a withdrawal recorded whose notification failed: the
// watchers see it at their next poll, within Within. Cause, what Redis
// said, is for the log.
type NotifyError struct {
	Version int64
	Within  time.Duration
	Cause   error
}

func (e *NotifyError) Error() string { return e.Public() + ": " + e.Cause.Error() }

// Public says what happened in words fit for the operator who asked for
// the withdrawal, without Cause.
func (e *NotifyError) Public() string {
	return fmt.Sprintf("withdrawn (version %d), but the notification failed; servers see it within %s", e.Version, e.Within)
}

// Unwrap returns Cause.
func (e *NotifyError) Unwrap() error { return e.Cause }

// Read returns the current state.
func (s *Store) Read(ctx context.Context) (State, error) {
	var members *redis.StringSliceCmd
	var version *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		members = p.SMembers(ctx, s.set)
		version = p.Get(ctx, s.version)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return State{}, fmt.Errorf("read withdrawn keys: %w", err)
	}
	st := State{Kids: map[string]bool{}}
	if v, err := version.Int64(); err == nil {
		st.Version = v
	}
	for _, k := range members.Val() {
		st.Kids[k] = true
	}
	return st, nil
}

func (s *Store) readVersion(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, s.version).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// WatchOptions tune a Watcher.
type WatchOptions struct {
	// PollInterval is how often the version is read (0:
	// DefaultPollInterval).
	PollInterval time.Duration
	// OnChange is called with every new state, once from Watch itself
	// with the state at start, then from the Watcher's goroutine, one call
	// at a time.
	OnChange func(State)
	// Logger receives Redis failures (nil: discarded).
	Logger *slog.Logger
}

// Watcher keeps the withdrawn kids current. It is safe for concurrent use.
type Watcher struct {
	store  *Store
	opt    WatchOptions
	state  atomic.Pointer[State]
	cancel context.CancelFunc
	done   chan struct{}
}

// Watch reads the state (waiting at most a couple of seconds: a Redis that
// is down leaves the set empty until it answers), then keeps it current in
// the background until ctx ends or Close is called.
func (s *Store) Watch(ctx context.Context, opt WatchOptions) *Watcher {
	if opt.PollInterval <= 0 {
		opt.PollInterval = DefaultPollInterval
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.OnChange == nil {
		opt.OnChange = func(State) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{store: s, opt: opt, cancel: cancel, done: make(chan struct{})}
	w.state.Store(&State{Kids: map[string]bool{}})
	// Subscribed before the first read, so that no withdrawal falls
	// between the two; Receive waits for Redis to confirm the subscription.
	sub := s.rdb.Subscribe(ctx, s.channel)
	if _, err := sub.ReceiveTimeout(ctx, readTimeout); err != nil {
		opt.Logger.Warn("subscribe to withdrawn signing keys; polling meanwhile", "err", err)
	}
	rctx, rcancel := context.WithTimeout(ctx, readTimeout)
	if st, err := s.Read(rctx); err != nil {
		opt.Logger.Warn("withdrawn signing keys not read yet", "err", err)
	} else {
		w.state.Store(&st)
	}
	rcancel()
	opt.OnChange(*w.state.Load())
	go w.run(ctx, sub)
	return w
}

// State returns the current state.
func (w *Watcher) State() State { return *w.state.Load() }

// Withdrawn reports whether kid is withdrawn.
func (w *Watcher) Withdrawn(kid string) bool { return w.state.Load().Kids[kid] }

// Close stops the watcher and waits for its goroutine.
func (w *Watcher) Close() {
	w.cancel()
	<-w.done
}

func (w *Watcher) run(ctx context.Context, sub *redis.PubSub) {
	defer close(w.done)
	defer sub.Close()
	msgs := sub.Channel()
	tick := time.NewTicker(w.opt.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-msgs:
			w.refresh(ctx)
		case <-tick.C:
			rctx, cancel := context.WithTimeout(ctx, readTimeout)
			v, err := w.store.readVersion(rctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					w.opt.Logger.Warn("read withdrawn signing keys version", "err", err)
				}
				continue
			}
			if v != w.state.Load().Version {
				w.refresh(ctx)
			}
		}
	}
}

// refresh re-reads the state and reports a change.
func (w *Watcher) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	st, err := w.store.Read(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.opt.Logger.Warn("read withdrawn signing keys", "err", err)
		}
		return
	}
	if st.Version == w.state.Load().Version {
		return
	}
	w.state.Store(&st)
	w.opt.Logger.Info("withdrawn signing keys changed", "version", st.Version, "withdrawn", len(st.Kids))
	w.opt.OnChange(st)
}
