package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/httprc/v3/errsink"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// Defaults of Options.
const (
	DefaultMinRefreshInterval = 30 * time.Second
	DefaultMaxRefreshInterval = 15 * time.Minute
	DefaultOnDemandInterval   = 2 * time.Second
	DefaultOnDemandWait       = 5 * time.Second
	DefaultFetchTimeout       = 10 * time.Second
)

// The retries of a failed first load (New): the first within a second,
// then backing off, doubling up to firstLoadMaxRetry, until a set is
// loaded. The jwk.Cache's own retry after a failure waits
// MinRefreshInterval (30 s), which left a resource server started with
// the token service without keys for that long.
const (
	firstLoadRetry    = 250 * time.Millisecond
	firstLoadMaxRetry = 2 * time.Second
)

// ErrNotLoaded is returned by KeySet until the first fetch has succeeded.
var ErrNotLoaded = errors.New("jwks: key set not loaded yet")

// Options tune a Source. Zero values are the defaults.
type Options struct {
	// HTTPClient fetches the set (default: a client with a
	// DefaultFetchTimeout timeout).
	HTTPClient *http.Client
	// MinRefreshInterval is the shortest time between two scheduled
	// fetches, and the wait before retrying a failed one.
	MinRefreshInterval time.Duration
	// MaxRefreshInterval is the longest a fetched set is kept, whatever
	// its Cache-Control says.
	MaxRefreshInterval time.Duration
	// OnDemandInterval is the shortest time between the starts of two
	// fetches asked for by FetchUnknownKey or RefreshSoon: however many
	// tokens with made-up key ids arrive, the token service is asked for
	// its keys at most once per interval by each replica.
	OnDemandInterval time.Duration
	// OnDemandWait bounds how long FetchUnknownKey waits for its fetch
	// (the rate limit's wait included).
	OnDemandWait time.Duration
	// Logger receives fetch failures (default: discarded).
	Logger *slog.Logger
}

// Source is the token service's JWKS, fetched and kept fresh by a jwx
// jwk.Cache: with the withdrawn kids (package keywithdrawal), the resource
// server's signing-key authority, an accesstoken.KeySource. It is safe for
// concurrent use.
type Source struct {
	url      string
	cache    *jwk.Cache
	res      *httprc.ResourceBase[jwk.Set]
	logger   *slog.Logger
	onDemand time.Duration
	maxWait  time.Duration
	// mu guards the fetches this Source starts itself (not the cache's
	// scheduled ones): one at a time.
	mu sync.Mutex
	// running is the fetch under way (nil: none); last the latest ended.
	running, last *fetch
	// lastOnDemand is when the latest rate-limited fetch started.
	lastOnDemand time.Time
	// done is closed by Close: it ends the fetches this Source started.
	done      chan struct{}
	closeOnce sync.Once
}

// fetch is one fetch of the set that the Source started; done is closed
// when it has ended, with err set.
type fetch struct {
	start time.Time
	done  chan struct{}
	err   error
}

// errClosed ends waits for a fetch after Close.
var errClosed = errors.New("jwks: source closed")

var _ accesstoken.KeyFetcher = (*Source)(nil)

// New starts fetching the JWKS at url in the background and returns at
// once, whether or not the set can be fetched yet: the server starts, its
// readiness probe reports the missing keys and its API answers 503 until the
// first fetch succeeds. While no set is loaded, a failed fetch is retried
// after firstLoadRetry, then twice as long each time up to
// firstLoadMaxRetry (loadFirst). ctx bounds the background fetching; Close
// ends it.
func New(ctx context.Context, url string, opt Options) (*Source, error) {
	if opt.HTTPClient == nil {
		opt.HTTPClient = &http.Client{Timeout: DefaultFetchTimeout}
	}
	if opt.MinRefreshInterval <= 0 {
		opt.MinRefreshInterval = DefaultMinRefreshInterval
	}
	if opt.MaxRefreshInterval <= 0 {
		opt.MaxRefreshInterval = DefaultMaxRefreshInterval
	}
	if opt.OnDemandInterval <= 0 {
		opt.OnDemandInterval = DefaultOnDemandInterval
	}
	if opt.OnDemandWait <= 0 {
		opt.OnDemandWait = DefaultOnDemandWait
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	logger := opt.Logger.With(slog.String("jwks_url", url))
	sink := errsink.NewFunc(func(ctx context.Context, err error) {
		logger.LogAttrs(ctx, slog.LevelWarn, "fetch signing keys", slog.Any("error", err))
	})
	cache, err := jwk.NewCache(ctx, httprc.NewClient(httprc.WithErrorSink(sink)))
	if err != nil {
		return nil, fmt.Errorf("jwks: start cache: %w", err)
	}
	err = cache.Register(ctx, url,
		jwk.WithHTTPClient(opt.HTTPClient),
		jwk.WithMinInterval(opt.MinRefreshInterval),
		jwk.WithMaxInterval(opt.MaxRefreshInterval),
		// Don't block start-up on the token service.
		jwk.WithWaitReady(false),
	)
	if err != nil {
		_ = cache.Shutdown(context.Background())
		return nil, fmt.Errorf("jwks: register %s: %w", url, err)
	}
	// Not cache.CachedSet: its methods wait, without a deadline, for the
	// first fetch, which would hang requests while the token service is
	// unreachable. The resource itself answers at once.
	res, err := cache.LookupResource(ctx, url)
	if err != nil {
		_ = cache.Shutdown(context.Background())
		return nil, fmt.Errorf("jwks: %w", err)
	}
	s := &Source{url: url, cache: cache, res: res, logger: logger, onDemand: opt.OnDemandInterval, maxWait: opt.OnDemandWait,
		done: make(chan struct{})}
	go s.loadFirst(ctx)
	return s, nil
}

// loadFirst fetches the set again until one is loaded (see New), the
// Source is closed or ctx ends. Its fetches are not rate limited: they are
// few, and the token service is most likely starting with this server.
func (s *Source) loadFirst(ctx context.Context) {
	for wait := firstLoadRetry; !s.Ready(); wait = min(2*wait, firstLoadMaxRetry) {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		if s.Ready() {
			return
		}
		f, _ := s.fetchAfter(time.Now(), false)
		select {
		case <-f.done:
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// KeySet returns the last fetched set, or ErrNotLoaded (and asks for a
// fetch, see RefreshSoon) while there is none.
func (s *Source) KeySet() (jwk.Set, error) {
	if set := s.res.Resource(); set != nil {
		return set, nil
	}
	s.RefreshSoon()
	return nil, ErrNotLoaded
}

// Ready reports whether a set has been fetched.
func (s *Source) Ready() bool { return s.res.Resource() != nil }

// FetchUnknownKey fetches the set for a token whose key id (kid) it does
// not hold, and returns once a fetch that started after the call has ended:
// nil when it succeeded (the set now is what the token service publishes),
// its error otherwise, or ctx's when ctx ends first or OnDemandWait has
// passed. The caller verifies the token again then and refuses it only if
// its key is still unknown, so the first token of a key published since the
// last fetch (a rotated signing key, after the token service restarted)
// is served, never refused.
//
// One fetch at a time: callers share the one under way (one that started
// before the call is waited for, then a new one started), and fetches start
// at most once per OnDemandInterval, so tokens with made-up key ids cannot
// make the replica fetch more often than that, whatever their number; they
// wait for the next allowed fetch instead (at most OnDemandInterval plus
// the fetch).
func (s *Source) FetchUnknownKey(ctx context.Context, kid string) error {
	since := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.maxWait)
	defer cancel()
	for {
		f, wait := s.fetchAfter(since, true)
		var ended <-chan struct{}
		var allowed <-chan time.Time
		if f != nil {
			ended = f.done
		} else {
			t := time.NewTimer(wait)
			defer t.Stop()
			allowed = t.C
		}
		select {
		case <-ended:
			if !f.start.Before(since) {
				return f.err
			}
			// A fetch that started before the call: it may have been
			// answered before the key was published. Ask for ours.
		case <-allowed: // the rate limit lets a fetch start
		case <-ctx.Done():
			return fmt.Errorf("jwks: wait for a fetch: %w", ctx.Err())
		case <-s.done:
			return errClosed
		}
	}
}

// RefreshSoon asks for the set to be fetched again, in the background,
// when the rate limit of FetchUnknownKey allows it now (while no set is
// loaded yet, see KeySet); it neither waits nor queues.
func (s *Source) RefreshSoon() {
	select {
	case <-s.done:
		return
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil && !time.Now().Before(s.lastOnDemand.Add(s.onDemand)) {
		s.startLocked(true)
	}
}

// fetchAfter returns the fetch to wait for: the one under way, the last
// one if it started at or after since, or one it starts now. When limited
// and OnDemandInterval has not passed since the last rate-limited start, it
// starts none and returns how long until it may.
func (s *Source) fetchAfter(since time.Time, limited bool) (*fetch, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return s.running, 0
	}
	if s.last != nil && !s.last.start.Before(since) {
		return s.last, 0
	}
	if limited {
		if next := s.lastOnDemand.Add(s.onDemand); time.Now().Before(next) {
			return nil, time.Until(next)
		}
	}
	return s.startLocked(limited), 0
}

// startLocked starts a fetch; s.mu is held.
func (s *Source) startLocked(limited bool) *fetch {
	f := &fetch{start: time.Now(), done: make(chan struct{})}
	s.running = f
	if limited {
		s.lastOnDemand = f.start
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultFetchTimeout)
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := s.cache.Refresh(ctx, s.url)
		if err != nil {
			err = fmt.Errorf("jwks: refresh: %w", err)
			if ctx.Err() == nil {
				s.logger.LogAttrs(ctx, slog.LevelWarn, "refresh signing keys", slog.Any("error", err))
			}
		}
		s.mu.Lock()
		f.err, s.running, s.last = err, nil, f
		s.mu.Unlock()
		close(f.done)
	}()
	return f
}

// Refresh fetches the set now, whatever its cache lifetime and the
// on-demand rate limit say (after the fetch under way, if any: one at a
// time): for a notice that the keys changed (a withdrawn key, see package
// keywithdrawal), which only operators cause.
func (s *Source) Refresh(ctx context.Context) error {
	since := time.Now()
	for {
		select {
		case <-s.done:
			return nil
		default:
		}
		f, _ := s.fetchAfter(since, false)
		select {
		case <-f.done:
			if !f.start.Before(since) {
				return f.err
			}
		case <-ctx.Done():
			return fmt.Errorf("jwks: refresh: %w", ctx.Err())
		case <-s.done:
			return nil
		}
	}
}

// Close stops the background fetching. It may be called more than once.
func (s *Source) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.cache.Shutdown(ctx)
	})
	return err
}
