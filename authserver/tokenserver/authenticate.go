package tokenserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// authenticate is the one way a client authenticates, on the token endpoint
// (token true: the requested scope is checked and the request counted
// against the client's token limit) and as the caller of introspection. It
// takes one Redis round trip (clients.Store.Authenticate) and returns the
// OAuth error to answer when the client is not let through.
//
// Failed authentications are limited so that nobody is locked out by a
// neighbour behind the same address (a hospital's shared egress, a NAT),
// nor by a stale instance of its own client there:
//
//   - distinct wrong secrets for a client are counted per presenting
//     address and client in Redis, atomically with the check,
//     FailuresPerMinute per minute; past it, that address's attempts for
//     that client with a new secret are answered slow_down without
//     checking the secret, and no other client, and not the same client
//     from elsewhere, is affected;
//   - a secret the address already had refused for that client in the last
//     minute (a rotated-out secret a stale instance keeps sending) is
//     answered invalid_client again without being checked or spending that
//     budget, and counted apart, RepeatedFailuresPerMinute per minute, past
//     which those repeats alone are answered slow_down: the right secret
//     sent from the same address keeps working;
//   - every failed request (invalid_client, whether or not the id names a
//     client; requests without credentials; malformed requests) counts
//     against the address's much higher AddressFailuresPerMinute, kept by
//     each replica in memory; past it, every such failure is answered
//     slow_down alike. Counting and answering known and unknown ids alike
//     keeps the ceiling from telling which ids exist (neither the answer
//     nor what an attempt leaves of the ceiling differs). A request with
//     valid credentials is never refused by it.
//
// A client assertion (private_key_jwt) is verified here against the
// client's keys, cached in memory, and then goes through the same script:
// its jti is marked used there, and a wrong or replayed one is a failure
// like a wrong secret, under the same limits (RFC 7521 section 4.2.1). A
// check (introspection) names a token of the caller whose standing is read
// in the same round trip.
func (s *Server) authenticate(ctx context.Context, r *http.Request, req *clientRequest, token bool, check *clients.TokenRef) (clients.Authentication, error) {
	if !req.Client.Present {
		return clients.Authentication{}, errInvalidClient
	}
	httpserver.Annotate(ctx, slog.String("client_id", loggableID(req.Client.ID)))
	attempt := clients.Attempt{
		ClientID: req.Client.ID, Secret: req.Client.Secret, Address: limitKey(s.cfg.Trust.Of(r)),
		FailureLimit: s.cfg.FailuresPerMinute, RepeatLimit: s.cfg.RepeatedFailuresPerMinute, Token: token, Now: s.cfg.RateNow,
		Check: check,
	}
	if req.Client.Assertion != "" {
		httpserver.Annotate(ctx, slog.String("auth_method", clients.AuthPrivateKeyJWT))
	} else if !s.secretForm(ctx, req.Client.Secret) {
		// Refused before any lookup, answered as any invalid_client and
		// counted, like any invalid_client, against the address.
		return clients.Authentication{}, errUnknownClient
	}
	if token {
		attempt.Scope, attempt.BadScope = requestedScope(req.Params.Get("scope"))
	}
	var a clients.Authentication
	// An assertion checked against keys the client no longer has is
	// checked again with its keys reloaded, once.
	for try := 0; try < 2; try++ {
		if req.Client.Assertion != "" {
			as, err := s.checkAssertion(ctx, req.Client, try > 0)
			if err != nil {
				return clients.Authentication{}, err
			}
			attempt.Assertion = as
		}
		var err error
		if a, err = s.reg.Authenticate(ctx, attempt); err != nil {
			return a, err
		}
		if a.Outcome != clients.StaleKeys {
			break
		}
	}
	if a.Outcome == clients.StaleKeys {
		return a, fmt.Errorf("%w: client %s: keys changed twice during one authentication", clients.ErrUnavailable, req.Client.ID)
	}
	if a.Repeated {
		// A secret this address already had refused for this client: most
		// often a stale instance still sending a rotated-out secret.
		httpserver.Annotate(ctx, slog.Bool("repeated_secret", true))
	}
	switch a.Outcome {
	case clients.Authenticated:
		return a, nil
	case clients.TooManyFailures:
		httpserver.Annotate(ctx, slog.Bool("failure_budget_spent", true))
		return a, &slowDown{retryAfter: a.Decision.RetryAfterSeconds(), failures: true}
	case clients.InvalidScope:
		return a, errInvalidScope
	case clients.TokenLimited:
		return a, &slowDown{retryAfter: a.Decision.RetryAfterSeconds()}
	}
	if !a.Known {
		return a, errUnknownClient
	}
	return a, errInvalidClient
}

// secretForm reports whether a presented secret may be looked up: its
// checksum holds (clients.ValidSecret), or it has the pre-checksum form and
// the operator still accepts those (Config.AcceptLegacySecrets; the access
// record then says legacy_secret, so the operator sees who must rotate). A
// secret refused here gets the same invalid_client as a wrong one, without
// any Redis lookup, and counts, like any invalid_client, against the
// address's ceiling of failed requests (Config.AddressFailuresPerMinute);
// its access record says secret_checksum_failed, which points at a
// mistyped or truncated secret.
func (s *Server) secretForm(ctx context.Context, secret string) bool {
	if clients.ValidSecret(secret) {
		return true
	}
	if s.cfg.AcceptLegacySecrets && clients.LegacySecret(secret) {
		httpserver.Annotate(ctx, slog.Bool("legacy_secret", true))
		return true
	}
	httpserver.Annotate(ctx, slog.Bool("secret_checksum_failed", true))
	return false
}

// errUnknownClient is invalid_client for an id that names no client (or a
// secret refused before any lookup): it is answered exactly as
// invalid_client, and counted against the address alike.
var errUnknownClient = &oauthError{Status: errInvalidClient.Status, Code: errInvalidClient.Code, Description: errInvalidClient.Description}

// maxScopeTokens bounds the scopes one request may name; there are four.
const maxScopeTokens = 16

// requestedScope reads a token request's scope (RFC 6749 section 3.3): nil
// when omitted or blank (every scope the client holds), and bad when it
// cannot be granted whatever the client holds (too many or malformed
// scope-tokens). Whether the client holds them is decided after its secret
// is checked, so a wrong secret never learns what a client holds.
func requestedScope(s string) (scope []string, bad bool) {
	if strings.Trim(s, " ") == "" {
		return nil, false
	}
	parts := strings.Split(s, " ")
	if len(parts) > maxScopeTokens {
		return nil, true
	}
	scope = []string{}
	for _, p := range parts {
		if p == "" {
			continue
		}
		if !validScopeToken(p) {
			return nil, true
		}
		scope = append(scope, p)
	}
	return scope, false
}

// validScopeToken: scope-token = 1*NQCHAR (RFC 6749 section 3.3).
func validScopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

// addressCeiling is the per-address limit of failed requests, kept by this
// replica in memory (a token bucket of AddressFailuresPerMinute a minute,
// golang.org/x/time/rate): it only slows a storm of failures (made-up ids
// above all) from one address, so it need not be exact across replicas, and
// keeping it in memory keeps an unknown id's attempt on exactly the Redis
// commands of a known one's.
type addressCeiling struct {
	perMinute int
	now       func() time.Time
	limiters  *lru.Cache[string, *rate.Limiter]
}

func newAddressCeiling(perMinute int, now func() time.Time) (*addressCeiling, error) {
	l, err := lru.New[string, *rate.Limiter](100_000)
	if err != nil {
		return nil, err
	}
	return &addressCeiling{perMinute: perMinute, now: now, limiters: l}, nil
}

// take counts one failure of addr and reports, when the ceiling is reached,
// how long until the address may fail again.
func (c *addressCeiling) take(addr string) (time.Duration, bool) {
	lim, ok := c.limiters.Get(addr)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(float64(c.perMinute)/60), c.perMinute)
		c.limiters.Add(addr, lim)
	}
	now := c.now()
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, true
	}
	return 0, false
}

// refuse answers err, first counting a failed request against the
// address's ceiling: past it, the answer is slow_down. Every invalid_client
// counts, a known id's (wrong, repeated or revoked secret) as an unknown
// one's: were only unknown ids counted or refused by the ceiling, an
// address that had spent it would get 401 for the ids that exist and 429
// for the others (and an attempt's effect on the ceiling would tell them
// apart even before): an existence oracle. Refusals by a client's own
// limits (slow_down) and invalid_scope or unsupported_grant_type do not
// count; a valid credential is never refused here.
func (s *Server) refuse(ctx context.Context, w http.ResponseWriter, r *http.Request, creds credentials, err error) {
	if oe, _ := toOAuth(err); oe == errUnknownClient || oe == errInvalidClient || oe.Code == "invalid_request" {
		if wait, over := s.ceiling.take(limitKey(s.cfg.Trust.Of(r))); over {
			httpserver.Annotate(ctx, slog.Bool("address_ceiling", true))
			err = &slowDown{retryAfter: int64((wait + time.Second - 1) / time.Second), failures: true}
		}
	}
	oe, _ := toOAuth(err)
	s.metrics.Refused(endpointOf(r), oe.Code)
	writeOAuthError(ctx, s.log, w, creds, err)
}

// retryAfterHeader is a Retry-After header of whole seconds.
func retryAfterHeader(seconds int64) http.Header {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(max(seconds, 1), 10))
	return h
}
