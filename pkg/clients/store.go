package clients

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store is the registry in Redis. It is safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
	// digestChecks counts secret comparisons (see DigestChecks).
	digestChecks atomic.Int64
}

// NewStore returns a Store whose keys all start with prefix ("" in
// production; tests isolate themselves with their own). now is the clock
// (nil: time.Now) used for timestamps.
func NewStore(rdb redis.UniversalClient, prefix string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, prefix: prefix, now: now}
}

func (s *Store) clientKey(id string) string   { return s.prefix + "{" + id + "}:client" }
func (s *Store) clientAudit(id string) string { return s.prefix + "{" + id + "}:audit" }
func (s *Store) apiLogKey(id string) string   { return s.prefix + "{" + id + "}:rl:api" }
func (s *Store) tokenLogKey(id string) string { return s.prefix + "{" + id + "}:rl:token" }
func (s *Store) orgKey(slug string) string    { return s.prefix + "{org:" + slug + "}:org" }
func (s *Store) orgAudit(slug string) string  { return s.prefix + "{org:" + slug + "}:audit" }
func (s *Store) orgIndex() string             { return s.prefix + "{registry}:orgs" }
func (s *Store) clientIndex() string          { return s.prefix + "{registry}:clients" }
func (s *Store) orgClients(slug string) string {
	return s.prefix + "{registry}:org:" + slug + ":clients"
}

// unavailable marks Redis failures so servers can answer 503.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// auditMaxLen caps each audit stream (approximately, XADD MAXLEN ~).
const auditMaxLen = 10000

// createOrgScript creates the organisation record and its audit entry in one
// step, or does nothing if it exists.
var createOrgScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'slug', ARGV[1], 'name', ARGV[2], 'environment', ARGV[3], 'created_at', ARGV[4])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'event', 'org.created', 'org', ARGV[1], 'at', ARGV[4])
return 1
`)

// CreateOrg creates an organisation; ErrExists if the slug is taken.
func (s *Store) CreateOrg(ctx context.Context, spec OrgSpec) (Org, error) {
	if err := spec.Validate(); err != nil {
		return Org{}, err
	}
	now := s.now().UTC()
	if err := s.rdb.SAdd(ctx, s.orgIndex(), spec.Slug).Err(); err != nil {
		return Org{}, unavailable("create org", err)
	}
	n, err := createOrgScript.Run(ctx, s.rdb, []string{s.orgKey(spec.Slug), s.orgAudit(spec.Slug)},
		spec.Slug, spec.Name, spec.Environment, formatTime(now), auditMaxLen).Int()
	if err != nil {
		return Org{}, unavailable("create org", err)
	}
	if n == 0 {
		return Org{}, fmt.Errorf("organisation %q: %w", spec.Slug, ErrExists)
	}
	return Org{Slug: spec.Slug, Name: spec.Name, Environment: spec.Environment, CreatedAt: now.Truncate(time.Millisecond)}, nil
}

// GetOrg reads an organisation; ErrNotFound if there is none.
func (s *Store) GetOrg(ctx context.Context, slug string) (Org, error) {
	m, err := s.rdb.HGetAll(ctx, s.orgKey(slug)).Result()
	if err != nil {
		return Org{}, unavailable("get org", err)
	}
	if len(m) == 0 {
		return Org{}, fmt.Errorf("organisation %q: %w", slug, ErrNotFound)
	}
	return orgFrom(m), nil
}

// ListOrgs lists every organisation, by slug.
func (s *Store) ListOrgs(ctx context.Context) ([]Org, error) {
	slugs, err := s.rdb.SMembers(ctx, s.orgIndex()).Result()
	if err != nil {
		return nil, unavailable("list orgs", err)
	}
	slices.Sort(slugs)
	cmds := make([]*redis.MapStringStringCmd, len(slugs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, slug := range slugs {
			cmds[i] = p.HGetAll(ctx, s.orgKey(slug))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("list orgs", err)
	}
	orgs := make([]Org, 0, len(slugs))
	for _, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			orgs = append(orgs, orgFrom(m))
		}
	}
	return orgs, nil
}

func orgFrom(m map[string]string) Org {
	return Org{Slug: m["slug"], Name: m["name"], Environment: m["environment"], CreatedAt: parseTime(m["created_at"])}
}

// createClientScript writes a whole client record and its audit entry, or
// nothing if the id exists.
var createClientScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = tonumber(ARGV[1])
local fields = {}
for i = 2, 1 + 2 * n do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
local at = ARGV[2 + 2 * n]
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3 + 2 * n], '*', 'event', 'client.created', 'client_id', ARGV[4 + 2 * n], 'at', at, 'generation', '1')
return 1
`)

// CreateClient creates a client in an existing organisation and returns it
// with its secret, which exists nowhere else: only its digest is stored.
func (s *Store) CreateClient(ctx context.Context, spec ClientSpec) (Client, string, error) {
	if err := spec.Validate(); err != nil {
		return Client{}, "", err
	}
	org, err := s.GetOrg(ctx, spec.OrgSlug)
	if err != nil {
		return Client{}, "", err
	}
	if spec.RateLimitPerMinute == 0 {
		spec.RateLimitPerMinute = DefaultRateLimitPerMinute
	}
	now := s.now().UTC()
	c := Client{
		ID: NewClientID(), Name: spec.Name, Audience: spec.Audience,
		OrgSlug: org.Slug, OrgName: org.Name, Environment: org.Environment,
		Scopes: slices.Clone(spec.Scopes), RateLimitPerMinute: spec.RateLimitPerMinute,
		TokenRateLimitPerMinute: DefaultTokenRateLimitPerMinute,
		Status:                  StatusActive, Generation: 1, CreatedAt: now, UpdatedAt: now,
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	secret := NewSecret()
	digest := DigestOf(secret)
	ts := formatTime(now)
	fields := []any{
		"client_id", c.ID, "name", c.Name, "audience", c.Audience,
		"org_slug", c.OrgSlug, "org_name", c.OrgName, "environment", c.Environment,
		"scopes", strings.Join(c.Scopes, " "), "rate_limit", c.RateLimitPerMinute,
		"token_rate_limit", c.TokenRateLimitPerMinute, "status", c.Status,
		"secret_digest", hex.EncodeToString(digest[:]), "generation", c.Generation,
		"created_at", ts, "updated_at", ts,
	}
	// Index first: a crash before the record leaves an index entry that
	// listings skip, never a half-written client.
	score := float64(now.UnixMilli())
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.clientIndex(), redis.Z{Score: score, Member: c.ID})
		p.ZAdd(ctx, s.orgClients(c.OrgSlug), redis.Z{Score: score, Member: c.ID})
		return nil
	})
	if err != nil {
		return Client{}, "", unavailable("create client", err)
	}
	args := append([]any{len(fields) / 2}, fields...)
	args = append(args, ts, auditMaxLen, c.ID)
	n, err := createClientScript.Run(ctx, s.rdb, []string{s.clientKey(c.ID), s.clientAudit(c.ID)}, args...).Int()
	if err != nil {
		return Client{}, "", unavailable("create client", err)
	}
	if n == 0 { // 120 random bits collided: practically impossible.
		return Client{}, "", fmt.Errorf("client %s: %w", c.ID, ErrExists)
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.Truncate(time.Millisecond), c.UpdatedAt.Truncate(time.Millisecond)
	return c, secret, nil
}

// changeScript applies one operator change to an existing client atomically
// with its audit entry. ARGV: op, at, maxlen, value. Returns the new
// generation, or 0 when there is no such client, -1 when it is revoked.
var changeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local op, at = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[1], 'status') ~= 'active' then return -1 end
local gen = tonumber(redis.call('HGET', KEYS[1], 'generation'))
local detail = ''
if op == 'rotate' then
  gen = redis.call('HINCRBY', KEYS[1], 'generation', 1)
  redis.call('HSET', KEYS[1], 'secret_digest', ARGV[4], 'rotated_at', at, 'updated_at', at)
  detail = 'generation=' .. gen
elseif op == 'revoke' then
  gen = redis.call('HINCRBY', KEYS[1], 'generation', 1)
  redis.call('HSET', KEYS[1], 'status', 'revoked', 'revoked_at', at, 'updated_at', at)
  detail = 'generation=' .. gen
elseif op == 'rate_limit' then
  redis.call('HSET', KEYS[1], 'rate_limit', ARGV[4], 'updated_at', at)
  detail = 'rate_limit_per_minute=' .. ARGV[4]
elseif op == 'token_rate_limit' then
  redis.call('HSET', KEYS[1], 'token_rate_limit', ARGV[4], 'updated_at', at)
  detail = 'token_rate_limit_per_minute=' .. ARGV[4]
else
  return redis.error_reply('unknown op')
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'event', 'client.' .. op, 'client_id', ARGV[5], 'at', at, 'detail', detail)
return gen
`)

// change runs changeScript and returns the client's generation after it.
func (s *Store) change(ctx context.Context, id, op, value string) (int64, error) {
	if !ValidClientID(id) {
		return 0, fmt.Errorf("client %q: %w", id, ErrNotFound)
	}
	n, err := changeScript.Run(ctx, s.rdb, []string{s.clientKey(id), s.clientAudit(id)},
		op, formatTime(s.now().UTC()), auditMaxLen, value, id).Int64()
	if err != nil {
		return 0, unavailable(op, err)
	}
	switch n {
	case 0:
		return 0, fmt.Errorf("client %s: %w", id, ErrNotFound)
	case -1:
		return 0, fmt.Errorf("client %s: %w", id, ErrRevoked)
	}
	return n, nil
}

// RotateSecret gives the client a new secret and raises its generation:
// from the moment it returns, the old secret is refused and every token
// issued before is dead, on every replica.
func (s *Store) RotateSecret(ctx context.Context, id string) (Client, string, error) {
	secret := NewSecret()
	d := DigestOf(secret)
	gen, err := s.change(ctx, id, "rotate", hex.EncodeToString(d[:]))
	if err != nil {
		return Client{}, "", err
	}
	c, err := s.GetClient(ctx, id)
	if err != nil {
		// The rotation happened: the new secret is the only one that works,
		// so it is returned even when the record cannot be read back.
		return Client{ID: id, Status: StatusActive, Generation: gen, Scopes: []string{}}, secret, nil
	}
	return c, secret, nil
}

// Revoke ends the client for good: token requests are refused and every
// token it holds is dead at once.
func (s *Store) Revoke(ctx context.Context, id string) (Client, error) {
	if _, err := s.change(ctx, id, "revoke", ""); err != nil {
		return Client{}, err
	}
	return s.GetClient(ctx, id)
}

// SetRateLimit sets the client's API requests per minute; it applies from
// the next request.
func (s *Store) SetRateLimit(ctx context.Context, id string, perMinute int64) (Client, error) {
	return s.setLimit(ctx, id, "rate_limit", perMinute)
}

// SetTokenRateLimit sets the client's token requests per minute.
func (s *Store) SetTokenRateLimit(ctx context.Context, id string, perMinute int64) (Client, error) {
	return s.setLimit(ctx, id, "token_rate_limit", perMinute)
}

func (s *Store) setLimit(ctx context.Context, id, op string, perMinute int64) (Client, error) {
	if perMinute < 1 || perMinute > MaxRateLimitPerMinute {
		return Client{}, fmt.Errorf("%w: rate limit %d: must be 1-%d", ErrInvalid, perMinute, MaxRateLimitPerMinute)
	}
	if _, err := s.change(ctx, id, op, strconv.FormatInt(perMinute, 10)); err != nil {
		return Client{}, err
	}
	return s.GetClient(ctx, id)
}

// GetClient reads a client's record; ErrNotFound if there is none.
func (s *Store) GetClient(ctx context.Context, id string) (Client, error) {
	if !ValidClientID(id) {
		return Client{}, fmt.Errorf("client %q: %w", id, ErrNotFound)
	}
	m, err := s.rdb.HGetAll(ctx, s.clientKey(id)).Result()
	if err != nil {
		return Client{}, unavailable("get client", err)
	}
	if len(m) == 0 {
		return Client{}, fmt.Errorf("client %s: %w", id, ErrNotFound)
	}
	return clientFrom(m), nil
}

// ListClients lists the clients of one organisation (or all when orgSlug is
// empty), oldest first.
func (s *Store) ListClients(ctx context.Context, orgSlug string) ([]Client, error) {
	index := s.clientIndex()
	if orgSlug != "" {
		index = s.orgClients(orgSlug)
	}
	ids, err := s.rdb.ZRange(ctx, index, 0, -1).Result()
	if err != nil {
		return nil, unavailable("list clients", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.clientKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("list clients", err)
	}
	out := make([]Client, 0, len(ids))
	for _, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			out = append(out, clientFrom(m))
		}
	}
	return out, nil
}

func clientFrom(m map[string]string) Client {
	c := Client{
		ID: m["client_id"], Name: m["name"], Audience: m["audience"],
		OrgSlug: m["org_slug"], OrgName: m["org_name"], Environment: m["environment"],
		Scopes: ParseScopes(m["scopes"]), Status: m["status"],
		CreatedAt: parseTime(m["created_at"]), UpdatedAt: parseTime(m["updated_at"]),
	}
	c.RateLimitPerMinute, _ = strconv.ParseInt(m["rate_limit"], 10, 64)
	c.TokenRateLimitPerMinute, _ = strconv.ParseInt(m["token_rate_limit"], 10, 64)
	c.Generation, _ = strconv.ParseInt(m["generation"], 10, 64)
	if v := m["rotated_at"]; v != "" {
		t := parseTime(v)
		c.RotatedAt = &t
	}
	if v := m["revoked_at"]; v != "" {
		t := parseTime(v)
		c.RevokedAt = &t
	}
	return c
}

// AuditEntry is one entry of an audit stream. It never holds a secret.
type AuditEntry struct {
	ID       string    `json:"id"`
	Event    string    `json:"event"`
	ClientID string    `json:"client_id,omitempty"`
	Org      string    `json:"org,omitempty"`
	At       time.Time `json:"at"`
	Detail   string    `json:"detail,omitempty"`
}

// ClientAudit returns a client's audit entries, oldest first.
func (s *Store) ClientAudit(ctx context.Context, id string) ([]AuditEntry, error) {
	return s.audit(ctx, s.clientAudit(id))
}

// OrgAudit returns an organisation's audit entries, oldest first.
func (s *Store) OrgAudit(ctx context.Context, slug string) ([]AuditEntry, error) {
	return s.audit(ctx, s.orgAudit(slug))
}

func (s *Store) audit(ctx context.Context, key string) ([]AuditEntry, error) {
	msgs, err := s.rdb.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, unavailable("read audit", err)
	}
	out := make([]AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		out = append(out, AuditEntry{ID: m.ID, Event: str("event"), ClientID: str("client_id"), Org: str("org"), At: parseTime(str("at")), Detail: str("detail")})
	}
	return out, nil
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UTC()
}

// IsUnavailable reports whether err means Redis could not be reached or
// answered with an error.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
