package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
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
	DefaultOnDemandInterval   = 10 * time.Second
	DefaultFetchTimeout       = 10 * time.Second
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
	// OnDemandInterval is the shortest time between two fetches asked for
	// by RefreshSoon.
	OnDemandInterval time.Duration
	// Logger receives fetch failures (default: discarded).
	Logger *slog.Logger
}

// Source is the token service's JWKS, fetched and kept fresh by a jwx
// jwk.Cache. It implements accesstoken.KeySource and is safe for concurrent
// use.
type Source struct {
	url      string
	cache    *jwk.Cache
	res      *httprc.ResourceBase[jwk.Set]
	logger   *slog.Logger
	onDemand time.Duration
	// lastOnDemand is the UnixNano of the last fetch RefreshSoon started.
	lastOnDemand atomic.Int64
	// done is closed by Close: it ends fetches RefreshSoon started.
	done      chan struct{}
	closeOnce sync.Once
}

var _ accesstoken.KeySource = (*Source)(nil)

// New starts fetching the JWKS at url in the background and returns at
// once, whether or not the set can be fetched yet: the server starts, its
// readiness probe reports the missing keys and its API answers 503 until the
// first fetch succeeds. ctx bounds the background fetching; Close ends it.
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
	return &Source{url: url, cache: cache, res: res, logger: logger, onDemand: opt.OnDemandInterval, done: make(chan struct{})}, nil
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

// RefreshSoon asks for the set to be fetched again, in the background, for
// a token signed by a key the set does not hold yet (a key published since
// the last fetch). It starts at most one fetch per OnDemandInterval, so
// tokens with made-up key ids cannot make the server fetch per request.
func (s *Source) RefreshSoon() {
	select {
	case <-s.done:
		return
	default:
	}
	now := time.Now().UnixNano()
	last := s.lastOnDemand.Load()
	if now-last < int64(s.onDemand) || !s.lastOnDemand.CompareAndSwap(last, now) {
		return
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
		if _, err := s.cache.Refresh(ctx, s.url); err != nil && ctx.Err() == nil {
			s.logger.LogAttrs(ctx, slog.LevelWarn, "refresh signing keys", slog.Any("error", err))
		}
	}()
}

// Refresh fetches the set now, whatever its cache lifetime and the
// on-demand rate limit say: for a notice that the keys changed (a
// withdrawn key, see package keywithdrawal), which only operators cause.
func (s *Source) Refresh(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if _, err := s.cache.Refresh(ctx, s.url); err != nil {
		return fmt.Errorf("jwks: refresh: %w", err)
	}
	return nil
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
