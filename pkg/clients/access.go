package clients

import (
	"context"
	"crypto/sha256"
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
// compared: one per authentication attempt (an unknown id's included), but
// none for an attempt refused unchecked by a failure budget or for a secret
// the address already had refused (Authentication.Repeated).
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
// of the presenting address for this client, the tags of the wrong secrets
// that address presented for this client, the log of their repeats. ARGV:
// digest (raw), digest (hex, for records written before digests were
// stored raw), 'token' or 'caller', requested scope bits (-1: every scope
// held, -2: a scope that cannot be granted), now_ms, window_ms, failure
// limit, the presented secret's failure tag, repeat limit.
//
// The digest is compared here with a plain string comparison, not in
// constant time: what is compared is a SHA-256 digest of a 256-bit random
// secret, and learning how much of a stored digest an attempt's digest
// matches tells nothing about the secret (it would take SHA-256 preimages
// to use). Unknown, wrong-secret and revoked attempts take this one path;
// an unknown id writes nothing, the others count a failure.
//
// Failures are limited per (address, client) so that a stale integration
// cannot lock out its own valid siblings behind the same address (issue 21):
//
//   - The failure log (KEYS[3]) counts DISTINCT wrong secrets: only those
//     are guesses. A new secret is compared only while fewer than the
//     failure limit were counted in the last minute; past it, new secrets
//     are refused unchecked, so at most the limit of guesses is ever
//     checked per address, client and minute, whatever the concurrency.
//     The right secret presented then is refused too: that address is
//     guessing at that client's secret, and telling it when it guessed
//     right is what the limit exists to prevent.
//   - Each wrong secret counted leaves its tag (KEYS[4], a hash of tag ->
//     the time it was counted): an attempt whose tag's failure still counts
//     in the failure log is a secret already known to be wrong (a
//     rotated-out secret a stale instance keeps sending), answered as wrong
//     again without being compared or counted as a guess; such repeats
//     count in their own log (KEYS[5]) under their own, higher, limit, past
//     which they alone are slowed down. So a repeated stale secret holds
//     one slot of the budget (when its failure leaves the log it is
//     compared and counted again) and the right secret from the same
//     address keeps working. Repeats do not refresh a tag: a guesser
//     repeating its old guesses would otherwise keep ever more tags alive.
//   - Memory stays bounded by the limit: a tag is added only with a
//     counted failure, at most the limit in any minute, and once the hash
//     holds the limit of tags the ones whose failures no longer count are
//     dropped first, which leaves fewer than the limit (the log admitted
//     this failure). The hash expires a minute after its newest tag; every
//     key carries the client's hash tag, so the script runs on Cluster.
//
// Returns {0} for an unknown id; {1, repeated} for a wrong secret or a
// revoked client (repeated: 1 when the secret was already known to be
// wrong, so not compared); {2, wait_ms, repeated} when the address has used
// up its budget of distinct wrong secrets for this client (nothing
// compared) or, repeated, its budget of repeats; {3, gen, held} for a
// scope the client does not hold; {4, gen, granted, count, wait_ms, limit}
// over the token limit; {5, gen, granted[, count, wait_ms, limit]}
// authenticated.
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
-- an empty window (measured: about 1 us of Redis CPU per request). Tags
-- are only written with a counted failure, so without a failure log there
-- is no tag to look up either.
local failures = 0
-- A tag lives as long as the failure it was counted with counts in the
-- failure log: while its one-second bucket (fb ms) overlaps the window, the
-- oldest counting in full as in window_limit. So a repeated secret holds at
-- most one of the budget's slots.
local fb = math.floor((window + 59) / 60)
local fj0 = math.floor((now - window + 1) / fb)
if redis.call('EXISTS', KEYS[3]) == 1 then
  local seen = tonumber(redis.call('HGET', KEYS[4], ARGV[8]))
  if seen and math.floor(seen / fb) >= fj0 then
    -- A secret whose failure still counts: not compared again, not a new
    -- guess. (A tag older than that, which its key's TTL would have
    -- dropped on the Redis clock, is compared and counted afresh, so the
    -- tags follow the limits' clock whichever it is.)
    local ok, _, rwait = window_limit(KEYS[5], tonumber(ARGV[9]), window, now)
    if ok == 0 then return {2, rwait, 1} end
    return {1, 1}
  end
  local _, n = window_limit(KEYS[3], 0, window, now)
  failures = n
end
if failures >= flimit then
  local _, _, fwait = window_limit(KEYS[3], flimit, window, now)
  return {2, fwait, 0}
end
if st[1] ~= 'active' or (st[2] ~= ARGV[1] and st[2] ~= ARGV[2]) then
  window_limit(KEYS[3], flimit, window, now)
  if redis.call('HLEN', KEYS[4]) >= flimit then
    local tags = redis.call('HGETALL', KEYS[4])
    for i = 1, #tags, 2 do
      if math.floor(tonumber(tags[i + 1]) / fb) < fj0 then redis.call('HDEL', KEYS[4], tags[i]) end
    end
  end
  redis.call('HSET', KEYS[4], ARGV[8], now)
  -- As long as the failure log lives at most (its newest one-second
  -- bucket leaving the window).
  redis.call('PEXPIRE', KEYS[4], window + fb)
  return {1, 0}
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

// Keys of the failure limits of one presenting address for one client,
// beside the failure log (store.go), under the client's hash tag.
func (s *Store) failureTagsKey(id, address string) string {
	return s.prefix + "{" + id + "}:fail:tags:" + address
}
func (s *Store) repeatLogKey(id, address string) string {
	return s.prefix + "{" + id + "}:rw:repeat:" + address
}

// failureTag is what the failure limits remember of a wrong secret: 8 bytes
// of a SHA-256 of its digest under a label of its own, so nothing in Redis
// besides the client record holds (a part of) any secret's digest. 64 bits
// keep the chance that the right secret shares a tag with one of the at
// most FailureLimit wrong ones negligible (one in 2^58 for 60).
func failureTag(d [32]byte) string {
	t := sha256.Sum256(append([]byte("partnerapi failed secret\x00"), d[:]...))
	return string(t[:8])
}

// AuthOutcome is what Authenticate decided.
type AuthOutcome int

// Outcomes of Authenticate.
const (
	// BadCredentials: an unknown client, a wrong secret or a revoked
	// client, alike (RFC 6749 section 5.2, invalid_client).
	BadCredentials AuthOutcome = iota
	// TooManyFailures: the presenting address has used up its budget of
	// distinct wrong secrets for this client, and the secret was not
	// checked; or (Repeated) its budget of repeats of secrets already known
	// to be wrong.
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
	// FailureLimit is how many distinct wrong secrets for this client one
	// address may present in any minute before its attempts with a new
	// secret are refused unchecked. A secret already found wrong (a stale
	// instance's rotated-out secret) is not a new guess: see RepeatLimit.
	FailureLimit int64
	// RepeatLimit is how many attempts in any minute one address may make
	// for this client with secrets it already presented and had refused in
	// the last minute, before those (and only those) are answered
	// TooManyFailures (0: 10 times FailureLimit). They are never compared
	// again and never spend FailureLimit, so a stale instance cannot lock
	// out the right secret sent from the same address.
	RepeatLimit int64
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
	// Repeated reports, for BadCredentials and TooManyFailures, a secret
	// this address already presented for this client in the last minute
	// and had refused: it was not compared again, and counted against
	// Attempt.RepeatLimit, not FailureLimit.
	Repeated bool
	// Generation is the client's credential generation (Authenticated,
	// TokenLimited, InvalidScope).
	Generation int64
	// Scopes are the granted scopes, in the catalogue's order.
	Scopes []string
	// Decision is the token limit's (Token requests) or, for
	// TooManyFailures, when the budget that refused (of distinct wrong
	// secrets, or of repeats) lets the address try again.
	Decision ratelimit.Decision
	// Limit is the client's token requests per minute.
	Limit int64
}

// Authenticate checks a client's credentials in one Redis round trip and,
// for a token request, its requested scope and token limit. Unknown,
// revoked and wrong-secret attempts cost the same hashing and the same one
// script, and come back alike as BadCredentials; an attempt refused by the
// failure budget (TooManyFailures) is not checked at all, nor is a secret
// the address already had refused (Repeated). See authenticateScript for
// how the failure limits keep a stale instance from locking out the right
// secret behind the same address.
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
	repeatLimit := a.RepeatLimit
	if repeatLimit <= 0 {
		repeatLimit = 10 * a.FailureLimit
	}
	r, err := authenticateScript.Run(ctx, s.rdb,
		[]string{s.clientKey(a.ClientID), s.tokenLogKey(a.ClientID), s.failureLogKey(a.ClientID, a.Address),
			s.failureTagsKey(a.ClientID, a.Address), s.repeatLogKey(a.ClientID, a.Address)},
		string(d[:]), hex.EncodeToString(d[:]), mode, want, ratelimit.NowArg(a.Now), Window.Milliseconds(),
		a.FailureLimit, failureTag(d), repeatLimit).Int64Slice()
	if err != nil || len(r) == 0 {
		return Authentication{}, unavailable("authenticate", fmt.Errorf("%v %v", err, r))
	}
	out := Authentication{Known: r[0] != 0}
	switch {
	case r[0] == 0 || (r[0] == 1 && len(r) == 2):
		out.Outcome = BadCredentials
		out.Repeated = r[0] == 1 && r[1] == 1
	case r[0] == 2 && len(r) == 3:
		out.Outcome, out.Repeated = TooManyFailures, r[2] == 1
		limit := a.FailureLimit
		if out.Repeated {
			limit = repeatLimit
		}
		out.Decision = ratelimit.FromScript(0, limit, r[1])
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
	// Compared: every attempt but those refused unchecked and the repeats
	// of a secret already found wrong (an unknown id costs the same
	// hashing and script as a comparison).
	if out.Outcome != TooManyFailures && !out.Repeated {
		s.digestChecks.Add(1)
	}
	return out, nil
}

// knownScopes reports whether every name is a scope of the catalogue.
func knownScopes(names []string) bool {
	for _, n := range names {
		if !slices.Contains(scopeCatalogue, n) {
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
