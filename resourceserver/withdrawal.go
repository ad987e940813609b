package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"

	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

// refetchAgainAfter is when the JWKS is fetched a second time after a
// withdrawal notice: the token service replica that answers the first fetch
// may not have reloaded its key file yet, and a new signing key would then
// be missing until the on-demand refresh.
const refetchAgainAfter = 3 * time.Second

// keyAuthority is the resource server's one signing-key authority: the token
// service's JWKS as package jwks fetches and caches it, and the withdrawn
// kids a keywithdrawal.Watcher keeps current. The verifier reads both
// (accesstoken.KeySource), so a withdrawn key's tokens, cached
// verifications included, are refused from the notice on, whatever the
// fetched JWKS still says, and never make the JWKS be fetched.
type keyAuthority struct {
	jwks        *jwks.Source
	withdrawals *keywithdrawal.Watcher
}

var (
	_ accesstoken.KeySource  = keyAuthority{}
	_ accesstoken.KeyFetcher = keyAuthority{}
)

// KeySet returns the last fetched JWKS.
func (a keyAuthority) KeySet() (jwk.Set, error) { return a.jwks.KeySet() }

// Withdrawn reports whether kid is withdrawn.
func (a keyAuthority) Withdrawn(kid string) bool { return a.withdrawals.Withdrawn(kid) }

// FetchUnknownKey fetches the JWKS for a kid it does not hold (see
// jwks.Source.FetchUnknownKey).
func (a keyAuthority) FetchUnknownKey(ctx context.Context, kid string) error {
	return a.jwks.FetchUnknownKey(ctx, kid)
}

// watchWithdrawals watches the withdrawn signing keys; on every change after
// start it fetches the JWKS again at once (and once more a little later).
func watchWithdrawals(ctx context.Context, rdb redis.UniversalClient, prefix string, keys *jwks.Source, logger *slog.Logger) *keywithdrawal.Watcher {
	started := false
	return keywithdrawal.NewStore(rdb, prefix).Watch(ctx, keywithdrawal.WatchOptions{
		Logger: logger,
		OnChange: func(st keywithdrawal.State) {
			if !started { // the state at start: the first fetch is under way
				started = true
				return
			}
			logger.Info("signing keys withdrawn: fetching the JWKS again", "withdrawn", len(st.Kids), "version", st.Version)
			go func() {
				for _, wait := range []time.Duration{0, refetchAgainAfter} {
					select {
					case <-ctx.Done():
						return
					case <-time.After(wait):
					}
					rctx, cancel := context.WithTimeout(ctx, jwks.DefaultFetchTimeout)
					if err := keys.Refresh(rctx); err != nil && ctx.Err() == nil {
						logger.Warn("fetch the JWKS after a withdrawal", "err", err)
					}
					cancel()
				}
			}()
		},
	})
}
