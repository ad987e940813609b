package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/luascript"
)

// CreateClient creates a client in an existing organisation and returns it
// with its secret, which exists nowhere else: only its digest is stored. A
// client with spec.Keys authenticates with private_key_jwt and has no
// secret ("" is returned).
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
	ms := now.UnixMilli()
	// The record stays in Redis's compact listpack encoding: every value
	// under 64 bytes (the digest raw, the scopes as a bit set, times as
	// milliseconds), which keeps a client at about 400 bytes.
	fields := []any{
		"name", c.Name, "audience", c.Audience,
		"org_slug", c.OrgSlug, "org_name", c.OrgName, "environment", c.Environment,
		"scopes", scopeBits(c.Scopes), "rate_limit", c.RateLimitPerMinute,
		"token_rate_limit", c.TokenRateLimitPerMinute, "status", c.Status,
		"generation", c.Generation, "created_at", ms, "updated_at", ms,
	}
	if spec.DPoPBound {
		fields = append(fields, "dpop_bound", 1)
		c.DPoPBound = true
	}
	secret, blob := "", []byte(nil)
	switch method := spec.Method(); method {
	case AuthPrivateKeyJWT, AuthSelfSignedTLSClient, AuthTLSClient:
		if spec.TLSSubject != nil {
			blob, err = spec.TLSSubject.blob()
			subject := *spec.TLSSubject
			c.TLSSubject = &subject
		} else {
			blob, err = spec.Keys.blob()
			c.JWKSURI = spec.Keys.URL
		}
		if err != nil {
			return Client{}, "", err
		}
		fields = append(fields, "auth_method", method, "keys_version", 1, "create_nonce", newNonce())
		if c.JWKSURI != "" {
			fields = append(fields, "jwks_uri", c.JWKSURI)
		}
		c.AuthMethod, c.KeysVersion, c.Secrets = method, 1, []SecretInfo{}
	default:
		secret = NewSecret()
		digest := DigestOf(secret)
		fields = append(fields, "secret_digest", string(digest[:]))
		c.AuthMethod, c.Secrets = AuthClientSecret, []SecretInfo{{ID: 1, CreatedAt: now.Truncate(time.Millisecond)}}
	}
	what := "create client " + c.ID
	// Index first: a crash before the record leaves an index entry that
	// listings skip, never a half-written client.
	idx, idxArgs := indexKeys{Set: s.orgClients(c.OrgSlug)}, indexArgs{Member: c.ID}
	_, idxAck, err := s.write(ctx, indexScript, idx.list(), idxArgs.list()...)
	if err != nil {
		return Client{}, "", unavailable(what, err)
	}
	entry := audit.Record{At: now, Event: "client.created", Detail: "generation=1", Actor: audit.ActorFrom(ctx)}
	if c.AuthMethod != AuthClientSecret {
		entry.Detail += " auth_method=" + c.AuthMethod
	}
	if c.DPoPBound {
		entry.Detail += " dpop_bound=true"
	}
	keys := createClientKeys{Client: s.clientKey(c.ID), Audit: s.clientAudit(c.ID), PublicKeys: s.keysKey(c.ID)}
	args := createClientArgs{AuditLine: entry.Line(), AuditCap: auditMaxLen, KeySet: string(blob), Fields: fields}
	cmd, ack, err := s.write(ctx, createClientScript, keys.list(), args.list()...)
	if err != nil {
		return Client{}, "", unavailable(what, err)
	}
	var r createClientReply
	if err := r.decode(cmd.Val()); err != nil {
		return Client{}, "", unavailable(what, err)
	}
	switch r.Code {
	case createClientCreated:
	case createClientExists: // 120 random bits collided: practically impossible.
		return Client{}, "", refuse(ErrExists, "client %s", c.ID)
	default:
		return Client{}, "", unavailable(what, fmt.Errorf("unexpected reply %v", r.Code))
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.Truncate(time.Millisecond), c.UpdatedAt.Truncate(time.Millisecond)
	if !s.confirmed(idxAck, ack) {
		return c, secret, s.notReplicated(what, idxAck, ack)
	}
	return c, secret, nil
}

// change runs one of the change scripts (scripts.go, lua/change.lua) on
// client id with value (and, for set_limit.lua, the limit's field) and
// returns the client's generation after it.
func (s *Store) change(ctx context.Context, script *luascript.Script, what, id, value, field string) (int64, error) {
	if !ValidClientID(id) {
		return 0, NotFoundf("client %q", id)
	}
	what += " client " + id
	keys := changeKeys{Client: s.clientKey(id), Audit: s.clientAudit(id), Nonce: s.changeNonceKey(id), PublicKeys: s.keysKey(id)}
	args := changeArgs{At: s.now().UnixMilli(), AuditCap: auditMaxLen, Nonce: newNonce(), Actor: audit.LineActor(audit.ActorFrom(ctx)),
		Value: value, Field: field}
	cmd, ack, err := s.write(ctx, script, keys.list(), args.list()...)
	if err != nil {
		return 0, unavailable(what, err)
	}
	var r changeReply
	if err := r.decode(cmd.Val()); err != nil {
		return 0, unavailable(what, err)
	}
	switch r.Code {
	case changeNotFound:
		return 0, NotFoundf("client %s", id)
	case changeRevoked:
		return 0, refuse(ErrRevoked, "client %s", id)
	case changeWrongMethod:
		// (read back on this refusal only, for its words)
		c, _ := s.GetClient(ctx, id)
		m := c.AuthMethod
		switch {
		case field == tlsSubjectField:
			if m == "" {
				m = AuthClientSecret
			}
			return 0, refuse(ErrConflict, "client %s authenticates with %s, not a certificate name (%s only)", id, m, AuthTLSClient)
		case m == AuthTLSClient:
			return 0, refuse(ErrConflict, "client %s authenticates with a certificate its CA issued (tls_client_auth): it has no secret or keys; change its certificate name (rotate-keys with a tls_client_auth_* name), or revoke it", id)
		case script == rotateKeysScript:
			return 0, refuse(ErrConflict, "client %s authenticates with a secret, not keys (rotate-secret)", id)
		}
		if m == "" || m == AuthClientSecret {
			m = AuthPrivateKeyJWT
		}
		return 0, refuse(ErrConflict, "client %s authenticates with %s, not a secret (rotate-keys)", id, m)
	case changeConflict:
		if script == addSecretScript {
			return 0, refuse(ErrConflict, "client %s already holds two secrets: retire one first", id)
		}
		return 0, refuse(ErrConflict, "secret %s is client %s's only secret: add another first, or rotate-secret", value, id)
	case changeNoSuchSecret:
		return 0, NotFoundf("client %s has no secret %s", id, value)
	case changeChanged:
	default:
		return 0, unavailable(what, fmt.Errorf("unexpected reply %+v", r))
	}
	if !s.confirmed(ack) {
		return r.Generation, s.notReplicated(what, ack)
	}
	return r.Generation, nil
}

// RotateSecret gives the client a new secret and raises its generation:
// from the moment it returns without error, the old secret is refused and
// every token issued before is dead, on every replica. When the replicas do
// not confirm it (ErrNotReplicated), the new secret is returned with the
// error: it works while the primary that holds it lives, but a failover may
// bring the old one back.
func (s *Store) RotateSecret(ctx context.Context, id string) (Client, string, error) {
	secret := NewSecret()
	d := DigestOf(secret)
	gen, err := s.change(ctx, rotateSecretScript, "rotate", id, string(d[:]), "")
	if gen == 0 {
		return Client{}, "", err
	}
	c, rerr := s.GetClient(ctx, id)
	if rerr != nil {
		// The rotation happened: the new secret is the only one that works,
		// so it is returned even when the record cannot be read back.
		c = Client{ID: id, Status: StatusActive, Generation: gen, Scopes: []string{}}
	}
	return c, secret, err
}

// AddSecret gives the client a second secret, beside the one it holds, for
// a rotation without downtime: deploy the new secret, then retire the old
// one (RetireSecret). Tokens of the old secret live until it is retired;
// the client's generation does not change. It returns the client, the new
// secret's id and the secret. ErrConflict when it already holds two
// secrets or authenticates with keys. When the replicas do not confirm it
// (ErrNotReplicated), the new secret is returned with the error.
func (s *Store) AddSecret(ctx context.Context, id string) (Client, int64, string, error) {
	secret := NewSecret()
	d := DigestOf(secret)
	gen, err := s.change(ctx, addSecretScript, "add_secret", id, string(d[:]), "")
	if gen == 0 {
		return Client{}, 0, "", err
	}
	c, rerr := s.GetClient(ctx, id)
	if rerr != nil {
		return Client{ID: id, Status: StatusActive, Generation: gen, Scopes: []string{}}, 0, secret, errors.Join(err, rerr)
	}
	var sid int64
	for _, si := range c.Secrets {
		sid = max(sid, si.ID)
	}
	return c, sid, secret, err
}

// RetireSecret takes the secret secretID from the client: from the moment
// it returns without error that secret is refused and every token issued
// for it is dead, on every replica; the client's other secret and its
// tokens are untouched. ErrConflict when it is the client's only secret
// (rotate-secret or revoke instead), ErrNotFound when the client holds no
// such secret.
func (s *Store) RetireSecret(ctx context.Context, id string, secretID int64) (Client, error) {
	if secretID < 1 {
		return Client{}, NotFoundf("client %s has no secret %d", id, secretID)
	}
	return s.changeAndRead(ctx, retireSecretScript, "retire_secret", id, strconv.FormatInt(secretID, 10), "")
}

// RotateKeys replaces the public keys of a private_key_jwt client and
// raises its generation: from the moment it returns without error,
// assertions signed by keys only the old set held are refused and every
// token issued before is dead, like a secret rotation.
func (s *Store) RotateKeys(ctx context.Context, id string, keys ClientKeySource) (Client, error) {
	if err := keys.Validate(); err != nil {
		return Client{}, err
	}
	blob, err := keys.blob()
	if err != nil {
		return Client{}, err
	}
	return s.changeAndRead(ctx, rotateKeysScript, "rotate_keys", id, string(blob), "")
}

// tlsSubjectField is the change's field that says its value is a
// certificate name, not a key set (rotate_keys.lua).
const tlsSubjectField = "tls_subject"

// RotateTLSSubject replaces the certificate name (RFC 8705 section 2.1.2)
// of a tls_client_auth client and raises its generation: from the moment
// it returns without error, a certificate naming only the old subject is
// refused and every token issued before is dead, like a key rotation. A
// partner whose certificate authority issues it a certificate under a new
// name keeps its client id.
func (s *Store) RotateTLSSubject(ctx context.Context, id string, sub TLSSubject) (Client, error) {
	if err := Invalid(sub.problems()...); err != nil {
		return Client{}, err
	}
	blob, err := sub.blob()
	if err != nil {
		return Client{}, err
	}
	return s.changeAndRead(ctx, rotateKeysScript, "rotate_tls_subject", id, string(blob), tlsSubjectField)
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

func (s *Store) setLimit(ctx context.Context, id, field string, perMinute int64) (Client, error) {
	if perMinute < 1 || perMinute > MaxRateLimitPerMinute {
		return Client{}, Invalidf("rate limit %d: must be 1-%d", perMinute, MaxRateLimitPerMinute)
	}
	return s.changeAndRead(ctx, setLimitScript, field, id, strconv.FormatInt(perMinute, 10), field)
}

// SetDPoPBound sets the client's dpop_bound_access_tokens (RFC 9449
// section 5.2, Client.DPoPBound); it applies from the next token request.
// Tokens issued before keep their kind: a bearer token issued while the
// client was not bound lives until it expires (rotate-secret or revoke to
// end them).
func (s *Store) SetDPoPBound(ctx context.Context, id string, bound bool) (Client, error) {
	v := "0"
	if bound {
		v = "1"
	}
	return s.changeAndRead(ctx, setDPoPScript, "dpop_bound", id, v, "")
}

// changeAndRead makes a change and reads the record back; a change the
// replicas did not confirm comes back with its error.
func (s *Store) changeAndRead(ctx context.Context, script *luascript.Script, what, id, value, field string) (Client, error) {
	gen, err := s.change(ctx, script, what, id, value, field)
	if gen == 0 {
		return Client{}, err
	}
	c, rerr := s.GetClient(ctx, id)
	if err == nil {
		err = rerr
	}
	return c, err
}

// GetClient reads a client's record; ErrNotFound if there is none.
func (s *Store) GetClient(ctx context.Context, id string) (Client, error) {
	if !ValidClientID(id) {
		return Client{}, NotFoundf("client %q", id)
	}
	m, err := s.rdb.HGetAll(ctx, s.clientKey(id)).Result()
	if err != nil {
		return Client{}, unavailable("get client", err)
	}
	if len(m) == 0 {
		return Client{}, NotFoundf("client %s", id)
	}
	c := clientFrom(id, m)
	if c.AuthMethod == AuthTLSClient {
		raw, err := s.rdb.Get(ctx, s.keysKey(id)).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Client{}, unavailable("get client", err)
		}
		if sub, ok := subjectFrom(raw); ok {
			c.TLSSubject = &sub
		}
	}
	return c, nil
}

func clientFrom(id string, m map[string]string) Client {
	c := Client{
		ID: id, Name: m["name"], Audience: m["audience"],
		OrgSlug: m["org_slug"], OrgName: m["org_name"], Environment: m["environment"],
		Scopes: scopesFrom(m["scopes"]), Status: m["status"],
		CreatedAt: parseTime(m["created_at"]), UpdatedAt: parseTime(m["updated_at"]),
	}
	c.RateLimitPerMinute, _ = strconv.ParseInt(m["rate_limit"], 10, 64)
	c.TokenRateLimitPerMinute, _ = strconv.ParseInt(m["token_rate_limit"], 10, 64)
	c.Generation, _ = strconv.ParseInt(m["generation"], 10, 64)
	c.DPoPBound = m["dpop_bound"] == "1"
	if v := m["rotated_at"]; v != "" {
		t := parseTime(v)
		c.RotatedAt = &t
	}
	if v := m["revoked_at"]; v != "" {
		t := parseTime(v)
		c.RevokedAt = &t
	}
	c.AuthMethod, c.Secrets = AuthClientSecret, []SecretInfo{}
	if am := m["auth_method"]; am != "" && am != AuthClientSecret {
		c.AuthMethod = am
		c.KeysVersion, _ = strconv.ParseInt(m["keys_version"], 10, 64)
		c.JWKSURI = m["jwks_uri"]
		return c
	}
	// Secret 1 of a record written before secrets had ids: made with the
	// client, or at its last rotation.
	first := SecretInfo{ID: 1, CreatedAt: c.CreatedAt}
	if c.RotatedAt != nil {
		first.CreatedAt = *c.RotatedAt
	}
	if v := m["secret_id"]; v != "" {
		first.ID, _ = strconv.ParseInt(v, 10, 64)
	}
	if v := m["secret_at"]; v != "" {
		first.CreatedAt = parseTime(v)
	}
	c.Secrets = append(c.Secrets, first)
	if v := m["secret2_id"]; v != "" {
		second := SecretInfo{CreatedAt: parseTime(m["secret2_at"])}
		second.ID, _ = strconv.ParseInt(v, 10, 64)
		c.Secrets = append(c.Secrets, second)
	}
	return c
}

// scopeBits stores a scope list as a bit set over the catalogue (bit i is
// scopeCatalogue[i]), so the record keeps every value under Redis's 64-byte
// listpack limit: the four scopes spelled out take 69 bytes.
func scopeBits(scopes []string) int64 {
	var bits int64
	for i, sc := range scopeCatalogue {
		if slices.Contains(scopes, sc) {
			bits |= 1 << i
		}
	}
	return bits
}

// scopesFrom reads a stored scope list: a bit set, or (records written
// before) the space-separated names. The result is in the catalogue's order.
func scopesFrom(v string) []string {
	bits, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return ParseScopes(v)
	}
	out := []string{}
	for i, sc := range scopeCatalogue {
		if bits&(1<<i) != 0 {
			out = append(out, sc)
		}
	}
	return out
}
