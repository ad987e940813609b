package clients

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Window of every per-minute limit.
const Window = time.Minute

// Credential is what the token endpoint needs to authenticate a client.
// For an unknown id it is the zero-standing credential: Matches still hashes
// and compares, and always fails.
type Credential struct {
	ClientID   string
	Audience   string
	Scopes     []string
	Generation int64
	active     bool
	digest     Digest
	checks     *atomic.Int64
}

// Matches hashes secret and compares it with the stored digest in constant
// time, on the same path for unknown, revoked and active clients (no timing
// oracle); only an active client's right secret matches.
func (c *Credential) Matches(secret string) bool {
	if c.checks != nil {
		c.checks.Add(1)
	}
	ok := c.digest.Matches(secret)
	return ok && c.active
}

// Credential reads what authenticating id takes, in one round trip. An
// unknown id, or one that is not even of the id's form, gives a credential
// that never matches, never an error.
func (s *Store) Credential(ctx context.Context, id string) (*Credential, error) {
	cred := &Credential{ClientID: id, digest: unknownDigest, checks: &s.digestChecks}
	if !ValidClientID(id) {
		return cred, nil
	}
	v, err := s.rdb.HMGet(ctx, s.clientKey(id), "status", "secret_digest", "generation", "scopes", "audience").Result()
	if err != nil {
		return nil, unavailable("read credential", err)
	}
	status, _ := v[0].(string)
	d, ok := digestFrom(str(v[1]))
	if !ok {
		return cred, nil
	}
	cred.digest = d
	cred.active = status == StatusActive
	cred.Generation, _ = strconv.ParseInt(str(v[2]), 10, 64)
	cred.Scopes = scopesFrom(str(v[3]))
	cred.Audience = str(v[4])
	return cred, nil
}

// DigestChecks is how many secrets this Store's credentials have hashed and
// compared: one per authentication attempt, whatever its outcome.
func (s *Store) DigestChecks() int64 { return s.digestChecks.Load() }

func str(v any) string { s, _ := v.(string); return s }

// digestFrom reads a stored digest: 32 raw bytes, or (records written
// before) 64 hexadecimal digits.
func digestFrom(v string) (Digest, bool) {
	var d Digest
	switch len(v) {
	case len(d):
		copy(d[:], v)
		return d, true
	case 2 * len(d):
		_, err := hex.Decode(d[:], []byte(v))
		return d, err == nil
	}
	return d, false
}

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

// admitTokenScript checks that the client is still active at the generation
// its secret was verified against and counts the token request. KEYS: record,
// token log. ARGV: generation, now_ms, member, window_ms.
var admitTokenScript = redis.NewScript(ratelimit.SlidingLogLua + `
local st = redis.call('HMGET', KEYS[1], 'status', 'generation', 'token_rate_limit')
if st[1] ~= 'active' or st[2] ~= ARGV[1] then return {0, 0, 0, 0} end
local limit = tonumber(st[3]) or 30
local a, c, w = sliding_log(KEYS[2], limit, tonumber(ARGV[4]), tonumber(ARGV[2]), ARGV[3])
return {2 - a, c, w, limit}
`)

// TokenAdmission is the result of AdmitToken.
type TokenAdmission struct {
	Outcome  Outcome
	Decision ratelimit.Decision
	Limit    int64
}

// AdmitToken counts one token request of an authenticated client, in one
// round trip, against its token limit (default 30 per minute). now is the
// clock for the log (nil: the Redis server's).
func (s *Store) AdmitToken(ctx context.Context, id string, generation int64, now func() time.Time) (TokenAdmission, error) {
	r, err := admitTokenScript.Run(ctx, s.rdb, []string{s.clientKey(id), s.tokenLogKey(id)},
		generation, ratelimit.NowArg(now), ratelimit.Member(), Window.Milliseconds()).Int64Slice()
	if err != nil || len(r) != 4 {
		return TokenAdmission{}, unavailable("admit token request", fmt.Errorf("%v %v", err, r))
	}
	return TokenAdmission{Outcome: Outcome(r[0]), Decision: ratelimit.FromScript(2-r[0], r[1], r[2]), Limit: r[3]}, nil
}

// admitAPIScript checks a token's client state and counts the API request,
// returning what GET /api/v1/me/ shows. KEYS: record, API log. ARGV:
// generation, now_ms, member, window_ms.
var admitAPIScript = redis.NewScript(ratelimit.SlidingLogLua + `
local st = redis.call('HMGET', KEYS[1], 'status', 'generation', 'rate_limit', 'name', 'audience', 'org_name', 'org_slug', 'environment')
if st[1] ~= 'active' or st[2] ~= ARGV[1] then return {0} end
local limit = tonumber(st[3]) or 120
local a, c, w = sliding_log(KEYS[2], limit, tonumber(ARGV[4]), tonumber(ARGV[2]), ARGV[3])
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
		generation, ratelimit.NowArg(now), ratelimit.Member(), Window.Milliseconds()).Slice()
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
