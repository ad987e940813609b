package dpopnonce

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

// RefreshEvery is how often Watch re-reads the secret.
const RefreshEvery = time.Minute

// Shared issues and checks the nonces of the secret in Redis
// (admission.Nonces, dpop.NonceChecker). It is safe for concurrent use.
type Shared struct {
	rdb redis.UniversalClient
	key string
	src atomic.Pointer[dpop.NonceSource]
}

var _ dpop.NonceChecker = (*Shared)(nil)

// Key is the Redis key of the shared secret, under prefix.
func Key(prefix string) string { return prefix + "{dpop}:nonce-secret" }

// SharedNonces reads the shared nonce secret from rdb under prefix,
// creating it (256 random bits, hex, kept for good) if no replica has
// yet, and returns the nonces made with it (dpop.DefaultNoncePeriod).
func SharedNonces(ctx context.Context, rdb redis.UniversalClient, prefix string) (*Shared, error) {
	s := &Shared{rdb: rdb, key: Key(prefix)}
	if err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh reads the secret again (creating it if it is gone) and uses it
// from now on.
func (s *Shared) Refresh(ctx context.Context) error {
	var fresh [dpop.MinNonceSecret]byte
	if _, err := rand.Read(fresh[:]); err != nil {
		return fmt.Errorf("dpop nonce secret: %w", err)
	}
	if err := s.rdb.SetNX(ctx, s.key, hex.EncodeToString(fresh[:]), 0).Err(); err != nil {
		return fmt.Errorf("dpop nonce secret: %w", err)
	}
	v, err := s.rdb.Get(ctx, s.key).Result()
	if err != nil {
		return fmt.Errorf("dpop nonce secret: %w", err)
	}
	secret, err := hex.DecodeString(v)
	if err != nil || len(secret) < dpop.MinNonceSecret {
		return errors.New("dpop nonce secret: the stored secret is not 32 or more hex-encoded bytes")
	}
	src, err := dpop.NewNonceSource(secret, 0)
	if err != nil {
		return err
	}
	s.src.Store(src)
	return nil
}

// Watch refreshes the secret every RefreshEvery until ctx ends; a failed
// read keeps the current secret and is logged.
func (s *Shared) Watch(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(RefreshEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "dpop nonces: refresh the shared secret", "err", err)
			}
		}
	}
}

// Nonce is the nonce of now's period, for a DPoP-Nonce header.
func (s *Shared) Nonce(now time.Time) string { return s.src.Load().Nonce(now) }

// Valid reports whether nonce is one the replicas issued and still accept
// (dpop.NonceSource.Valid).
func (s *Shared) Valid(nonce string, now time.Time) bool { return s.src.Load().Valid(nonce, now) }
