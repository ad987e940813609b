package clients

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Window of every per-minute limit.
const Window = time.Minute

// DigestChecks is how many secrets this Store's credentials have hashed and
// compared: one per authentication attempt, whatever its outcome.
func (s *Store) DigestChecks() int64 { return s.digestChecks.Load() }

func str(v any) string { s, _ := v.(string); return s }

// Admission outcomes of AdmitToken and AdmitAPI.
type Outcome int

// Outcomes.
const (
	// Dead: unknown client, revoked, or the generation moved on.
	Dead Outcome = iota
	// Admitted: in good standing and under the limit.
	Admitted
	// Limited: in good standing but over the limit.
	Limited
)

// authenticateScript authenticates a client by the digest of the secret it
// presents and, for a token request, checks the requested scope and counts
// the request, all in one round trip. KEYS: record, token log, failure log
// of the presenting address for this client. ARGV: digest (raw), digest
// (hex, for records written before digests were stored raw), 'token' or
// 'caller', requested scope bits (-1: every scope held, -2: a scope that
// cannot be granted), now_ms, window_ms, failure limit.
//
// The digest is compared here with a plain string comparison, not in
// constant time: what is compared is a SHA-256 digest of a 256-bit random
// secret, and learning how much of a stored digest an attempt's digest
// matches tells nothing about the secret (it would take SHA-256 preimages
// to use). Unknown, wrong-secret and revoked attempts take this one path;
// an unknown id writes nothing, the others count a failure.
//
// Returns {0} for an unknown id; {1} for a wrong secret or a revoked
// client; {2, wait_ms} when the address has used up its failure budget for
// this client (nothing compared); {3, gen, held} for a scope the client does
// not hold; {4, gen, granted, count, wait_ms, limit} over the token limit;
// {5, gen, granted[, count, wait_ms, limit]} authenticated.
var authenticateScript = redis.NewScript(ratelimit.WindowLua + `
local function scope_bits(v)
  local n = tonumber(v)
  if n then return n end
  local names = {['programme.metrics.read'] = 1, ['events.subscribe'] = 2, ['patients.read'] = 4, ['referrals.write'] = 8}
  local bits = 0
  for w in string.gmatch(v or '', '%S+') do bits = bits + (names[w] or 0) end
  return bits
end
local st = redis.call('HMGET', KEYS[1], 'status', 'secret_digest', 'generation', 'scopes', 'token_rate_limit')
if not st[2] then return {0} end
-- One clock reading for the whole script (wl_now: the Redis server's TIME
-- unless the caller passed a time), not one per window_limit call.
local now = wl_now(tonumber(ARGV[5]))
local window, flimit = tonumber(ARGV[6]), tonumber(ARGV[7])
-- The failure budget is looked at before the secret (a limit of 0 only
-- reads the count), so a spent budget checks nothing; a failure is counted
-- in the same script, so no burst gets more than the budget checked. A
-- client without failures has no such key: EXISTS is cheaper than reading
-- an empty window (measured: about 1 us of Redis CPU per request).
local failures = 0
if redis.call('EXISTS', KEYS[3]) == 1 then
  local _, n = window_limit(KEYS[3], 0, window, now)
  failures = n
end
if failures >= flimit then
  local _, _, fwait = window_limit(KEYS[3], flimit, window, now)
  return {2, fwait}
end
if st[1] ~= 'active' or (st[2] ~= ARGV[1] and st[2] ~= ARGV[2]) then
  window_limit(KEYS[3], flimit, window, now)
  return {1}
end
-- (the bit library is not in every Redis's Lua: plain arithmetic)
local function subset(a, b)
  for i = 0, 30 do
    local p = 2 ^ i
    if p > a then return true end
    if math.floor(a / p) % 2 == 1 and math.floor(b / p) % 2 == 0 then return false end
  end
  return true
end
local gen, held = tonumber(st[3]), scope_bits(st[4])
local want = tonumber(ARGV[4])
if want == -2 or (want >= 0 and not subset(want, held)) then return {3, gen, held} end
if want == -1 then want = held end
if ARGV[3] ~= 'token' then return {5, gen, want} end
local limit = tonumber(st[5]) or 30
local a, c, w = window_limit(KEYS[2], limit, window, now)
if a == 0 then return {4, gen, want, c, w, limit} end
return {5, gen, want, c, w, limit}
`)

// AuthOutcome is what Authenticate decided.
type AuthOutcome int

// Outcomes of Authenticate.
const (
	// BadCredentials: an unknown client, a wrong secret or a revoked
	// client, alike (RFC 6749 section 5.2, invalid_client).
	BadCredentials AuthOutcome = iota
	// TooManyFailures: the presenting address has used up its budget of
	// failed authentications for this client; the secret was not checked.
	TooManyFailures
	// InvalidScope: authenticated, but the requested scope is not held.
	InvalidScope
	// TokenLimited: authenticated, but over the client's token limit.
	TokenLimited
	// Authenticated: the secret matches an active client (and, for a token
	// request, the request was counted under its limit).
	Authenticated
)

// Attempt is one client authentication: on the token endpoint (Token) or
// by the caller of introspection.
type Attempt struct {
	ClientID string
	// Secret is hashed here; only its digest goes to Redis.
	Secret string
	// Address identifies who presents the credentials (an IPv4 address or
	// an IPv6 /64): failures are counted per address and client, so a
	// stale integration never locks out its neighbours behind the same
	// address, nor anyone out of another client.
	Address string
	// FailureLimit is how many failed authentications of this client one
	// address may make in any minute before its attempts are refused
	// unchecked.
	FailureLimit int64
	// Token marks a token request: Scope is checked and the request counted
	// against the client's token limit.
	Token bool
	// Scope is the requested scope (nil: every scope the client holds).
	// BadScope marks a request naming a scope that cannot be granted (not
	// a scope of the catalogue, or malformed): once authenticated, it is
	// InvalidScope.
	Scope    []string
	BadScope bool
	// Now is the clock of the limits (nil: the Redis server's).
	Now func() time.Time
}

// Authentication is the result of Authenticate.
type Authentication struct {
	Outcome AuthOutcome
	// Known reports whether the id names a client at all.
	Known bool
	// Generation is the client's credential generation (Authenticated,
	// TokenLimited, InvalidScope).
	Generation int64
	// Scopes are the granted scopes, in the catalogue's order.
	Scopes []string
	// Decision is the token limit's (Token requests) or, for
	// TooManyFailures, when the failure budget lets the address try again.
	Decision ratelimit.Decision
	// Limit is the client's token requests per minute.
	Limit int64
}

// Authenticate checks a client's credentials in one Redis round trip and,
// for a token request, its requested scope and token limit. Unknown,
// revoked and wrong-secret attempts cost the same hashing and the same one
// script, and come back alike as BadCredentials; an attempt refused by the
// failure budget (TooManyFailures) is not checked at all.
func (s *Store) Authenticate(ctx context.Context, a Attempt) (Authentication, error) {
	d := DigestOf(a.Secret)
	if !ValidClientID(a.ClientID) {
		s.digestChecks.Add(1) // the same hashing as any attempt
		return Authentication{Outcome: BadCredentials}, nil
	}
	want := int64(-1)
	switch {
	case a.BadScope:
		want = -2
	case a.Scope != nil:
		want = scopeBits(a.Scope)
		if !knownScopes(a.Scope) {
			want = -2
		}
	}
	mode := "caller"
	if a.Token {
		mode = "token"
	}
	r, err := authenticateScript.Run(ctx, s.rdb,
		[]string{s.clientKey(a.ClientID), s.tokenLogKey(a.ClientID), s.failureLogKey(a.ClientID, a.Address)},
		string(d[:]), hex.EncodeToString(d[:]), mode, want, ratelimit.NowArg(a.Now), Window.Milliseconds(),
		a.FailureLimit).Int64Slice()
	if err != nil || len(r) == 0 {
		return Authentication{}, unavailable("authenticate", fmt.Errorf("%v %v", err, r))
	}
	if r[0] != 2 {
		s.digestChecks.Add(1)
	}
	out := Authentication{Known: r[0] != 0}
	switch {
	case r[0] <= 1:
		out.Outcome = BadCredentials
	case r[0] == 2 && len(r) == 2:
		out.Outcome = TooManyFailures
		out.Decision = ratelimit.FromScript(0, a.FailureLimit, r[1])
	case r[0] == 3 && len(r) == 3:
		out.Outcome, out.Generation, out.Scopes = InvalidScope, r[1], scopesFrom(strconv.FormatInt(r[2], 10))
	case (r[0] == 4 || r[0] == 5) && len(r) >= 3:
		out.Outcome, out.Generation, out.Scopes = Authenticated, r[1], scopesFrom(strconv.FormatInt(r[2], 10))
		if r[0] == 4 {
			out.Outcome = TokenLimited
		}
		if len(r) == 6 {
			out.Decision = ratelimit.FromScript(r[0]-4, r[3], r[4])
			out.Limit = r[5]
		}
	default:
		return Authentication{}, unavailable("authenticate", fmt.Errorf("unexpected reply %v", r))
	}
	return out, nil
}

// knownScopes reports whether every name is a scope of the catalogue.
func knownScopes(names []string) bool {
	for _, n := range names {
		if !slices.Contains(AllScopes, n) {
			return false
		}
	}
	return true
}

// admitAPIScript checks a token's client state and counts the API request,
// returning what GET /api/v1/me/ shows. KEYS: record, API log. ARGV:
// generation, now_ms, member, window_ms.
var admitAPIScript = redis.NewScript(ratelimit.WindowLua + `
local st = redis.call('HMGET', KEYS[1], 'status', 'generation', 'rate_limit', 'name', 'audience', 'org_name', 'org_slug', 'environment')
if st[1] ~= 'active' or st[2] ~= ARGV[1] then return {0} end
local limit = tonumber(st[3]) or 120
local a, c, w = window_limit(KEYS[2], limit, tonumber(ARGV[3]), tonumber(ARGV[2]))
return {2 - a, c, w, limit, st[4], st[5], st[6], st[7], st[8]}
`)

// Description is what GET /api/v1/me/ shows of a client beyond its token.
type Description struct {
	Name               string
	Audience           string
	OrgName            string
	OrgSlug            string
	Environment        string
	RateLimitPerMinute int64
}

// APIAdmission is the result of AdmitAPI.
type APIAdmission struct {
	Outcome     Outcome
	Decision    ratelimit.Decision
	Description Description
}

// AdmitAPI decides one API request made with a token of client id at
// generation, in one round trip: the client must be active at that
// generation (so a rotation or revocation shows on the next request), and
// under its per-minute limit, counted across every replica.
func (s *Store) AdmitAPI(ctx context.Context, id string, generation int64, now func() time.Time) (APIAdmission, error) {
	r, err := admitAPIScript.Run(ctx, s.rdb, []string{s.clientKey(id), s.apiLogKey(id)},
		generation, ratelimit.NowArg(now), Window.Milliseconds()).Slice()
	if err != nil {
		return APIAdmission{}, unavailable("admit API request", err)
	}
	if len(r) == 1 {
		return APIAdmission{Outcome: Dead}, nil
	}
	if len(r) != 9 {
		return APIAdmission{}, unavailable("admit API request", fmt.Errorf("unexpected reply of %d values", len(r)))
	}
	num := func(v any) int64 { n, _ := v.(int64); return n }
	a := APIAdmission{
		Outcome:  Outcome(num(r[0])),
		Decision: ratelimit.FromScript(2-num(r[0]), num(r[1]), num(r[2])),
		Description: Description{
			RateLimitPerMinute: num(r[3]), Name: str(r[4]), Audience: str(r[5]),
			OrgName: str(r[6]), OrgSlug: str(r[7]), Environment: str(r[8]),
		},
	}
	return a, nil
}
