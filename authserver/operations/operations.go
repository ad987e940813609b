package operations

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jwksuri"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
)

// Service runs operator actions. Its zero value is not usable: Registry is
// required; Withdrawals only for WithdrawKey.
type Service struct {
	Registry    *clients.Store
	Withdrawals *keywithdrawal.Store
	// JWKS is the token service's jwks_uri policy (JWKS_URL_ALLOW_HTTP,
	// JWKS_URL_ALLOW_PRIVATE): a jwks_uri is registered only if the token
	// service would fetch it (jwksuri.Policy.CheckRegistration).
	JWKS jwksuri.Policy
}

// ErrInvalid marks bad input; errors.Is(err, clients.ErrInvalid) holds too.
// Every such error is a *clients.Error, whose Detail says what to fix.
var ErrInvalid = clients.ErrInvalid

// CheckLimit is the one rule for every per-minute limit: a whole number of
// at least 1 (and at most clients.MaxRateLimitPerMinute).
func CheckLimit(what string, n int64) error {
	if n < 1 {
		return clients.Invalidf("%s %d: a limit must be at least 1 request per minute", what, n)
	}
	if n > clients.MaxRateLimitPerMinute {
		return clients.Invalidf("%s %d: a limit must be at most %d requests per minute", what, n, clients.MaxRateLimitPerMinute)
	}
	return nil
}

// WithSecret is a client with its secret: the one time the secret is shown
// (its wire form: ClientWithSecret).
type WithSecret struct {
	clients.Client
	ClientSecret string
	// SecretID is the new secret's id (add-secret only).
	SecretID int64
}

// CreateOrg creates an organisation.
func (s *Service) CreateOrg(ctx context.Context, spec clients.OrgSpec) (clients.Org, error) {
	return s.Registry.CreateOrg(ctx, spec)
}

// ListOrgs lists every organisation, by slug.
func (s *Service) ListOrgs(ctx context.Context) ([]clients.Org, error) {
	return s.Registry.ListOrgs(ctx)
}

// GetOrg reads one organisation.
func (s *Service) GetOrg(ctx context.Context, slug string) (clients.Org, error) {
	return s.Registry.GetOrg(ctx, slug)
}

// ErrScopesRequired refuses a client spec that does not say its scopes
// (nil Scopes): a client's scopes are chosen, never left out by mistake.
// An empty list (the CLI's --scopes "", the admin API's "scopes": [])
// makes a client with no scope.
var ErrScopesRequired = clients.Invalidf(`scopes are required: list the client's scopes (an empty list makes a client with no scope)`)

// CreateClient creates a partner client. A client the replicas did not
// confirm comes back with its secret and the error. Its scopes must be
// given (ErrScopesRequired), at the CLI and the admin API alike.
func (s *Service) CreateClient(ctx context.Context, spec clients.ClientSpec) (WithSecret, error) {
	if spec.Audience == clients.AudienceOperator || spec.OrgSlug == clients.OperatorOrgSlug {
		return WithSecret{}, clients.Invalidf("operator clients are made with 'authserver operators create', not as partner clients")
	}
	if spec.RateLimitPerMinute != 0 {
		if err := CheckLimit("rate limit", spec.RateLimitPerMinute); err != nil {
			return WithSecret{}, err
		}
	}
	if spec.Scopes == nil {
		return WithSecret{}, ErrScopesRequired
	}
	// Every problem of the spec first, then whether its jwks_uri can be
	// fetched (a lookup).
	if err := spec.Validate(); err != nil {
		return WithSecret{}, err
	}
	if err := s.checkKeys(ctx, spec.Keys); err != nil {
		return WithSecret{}, err
	}
	c, secret, err := s.Registry.CreateClient(ctx, spec)
	return withSecret(c, secret, err)
}

// checkKeys checks a jwks_uri against the policy, resolving its host:
// the token service must be able to fetch what is registered.
func (s *Service) checkKeys(ctx context.Context, keys *clients.ClientKeySource) error {
	if keys == nil || keys.URL == "" || keys.Validate() != nil {
		return nil // the registry says what is wrong with the keys, as before
	}
	p := s.JWKS
	p.AllowHTTP = p.AllowHTTP || keys.AllowHTTP
	return p.CheckRegistration(ctx, keys.URL)
}

// CreateOperator creates an operator client (a caller of the admin API).
func (s *Service) CreateOperator(ctx context.Context, spec clients.OperatorSpec) (WithSecret, error) {
	c, secret, err := s.Registry.CreateOperator(ctx, spec)
	return withSecret(c, secret, err)
}

// RotateSecret gives a client a new secret; every earlier token dies. A
// rotation the replicas did not confirm comes back with the new secret and
// the error: the rotation took effect, the old secret is dead and the new
// one is the only one that works.
func (s *Service) RotateSecret(ctx context.Context, id string) (WithSecret, error) {
	c, secret, err := s.Registry.RotateSecret(ctx, id)
	return withSecret(c, secret, err)
}

func withSecret(c clients.Client, secret string, err error) (WithSecret, error) {
	if secret == "" {
		return WithSecret{Client: c}, err
	}
	return WithSecret{Client: c, ClientSecret: secret}, err
}

// AddSecret gives a client a second secret for a rotation without downtime
// (deploy/docs/operator-guide.md, "Rotation without downtime"). An addition the replicas did not
// confirm comes back with the secret and the error: it works now.
func (s *Service) AddSecret(ctx context.Context, id string) (WithSecret, error) {
	c, sid, secret, err := s.Registry.AddSecret(ctx, id)
	w, err := withSecret(c, secret, err)
	w.SecretID = sid
	return w, err
}

// RetireSecret takes one of a client's two secrets away; that secret's
// tokens die at once, the other's live on.
func (s *Service) RetireSecret(ctx context.Context, id string, secretID int64) (clients.Client, error) {
	return s.Registry.RetireSecret(ctx, id, secretID)
}

// RotateKeys replaces a private_key_jwt client's public keys; every token
// issued before dies at once.
func (s *Service) RotateKeys(ctx context.Context, id string, keys clients.ClientKeySource) (clients.Client, error) {
	if err := s.checkKeys(ctx, &keys); err != nil {
		return clients.Client{}, err
	}
	return s.Registry.RotateKeys(ctx, id, keys)
}

// RotateTLSSubject replaces a tls_client_auth client's certificate name
// (RFC 8705 section 2.1.2), for a partner whose certificate authority
// issued it a certificate under a new name; every token issued before
// dies at once.
func (s *Service) RotateTLSSubject(ctx context.Context, id string, sub clients.TLSSubject) (clients.Client, error) {
	return s.Registry.RotateTLSSubject(ctx, id, sub)
}

// Revoke ends a client for good.
func (s *Service) Revoke(ctx context.Context, id string) (clients.Client, error) {
	return s.Registry.Revoke(ctx, id)
}

// SetRateLimit sets a client's API requests per minute, or its token
// requests per minute when token is true.
func (s *Service) SetRateLimit(ctx context.Context, id string, perMinute int64, token bool) (clients.Client, error) {
	if err := CheckLimit("rate limit", perMinute); err != nil {
		return clients.Client{}, err
	}
	if token {
		return s.Registry.SetTokenRateLimit(ctx, id, perMinute)
	}
	return s.Registry.SetRateLimit(ctx, id, perMinute)
}

// SetDPoPBound sets or clears a client's dpop_bound_access_tokens (RFC
// 9449 section 5.2), from its next token request.
func (s *Service) SetDPoPBound(ctx context.Context, id string, bound bool) (clients.Client, error) {
	return s.Registry.SetDPoPBound(ctx, id, bound)
}

// GetClient reads one client (never a secret).
func (s *Service) GetClient(ctx context.Context, id string) (clients.Client, error) {
	return s.Registry.GetClient(ctx, id)
}

// ListClients lists every client, or one organisation's (an unknown
// organisation is ErrNotFound, not an empty list), oldest first.
func (s *Service) ListClients(ctx context.Context, orgSlug string) ([]clients.Client, error) {
	return s.Registry.ListClients(ctx, orgSlug)
}

// MaxPageSize bounds one page of ListClientPage.
const MaxPageSize = 500

// ListClientPage lists one page of clients in client id order, after the
// client id after.
func (s *Service) ListClientPage(ctx context.Context, orgSlug, after string, limit int) (clients.ClientPage, error) {
	if limit < 1 || limit > MaxPageSize {
		return clients.ClientPage{}, clients.Invalidf("limit %d: must be 1-%d", limit, MaxPageSize)
	}
	return s.Registry.ListClientPage(ctx, orgSlug, after, limit)
}

// ClientAudit returns a client's audit entries, oldest first; an unknown
// client is ErrNotFound, not an empty trail.
func (s *Service) ClientAudit(ctx context.Context, id string) ([]audit.Record, error) {
	if _, err := s.Registry.GetClient(ctx, id); err != nil {
		return nil, err
	}
	return s.Registry.ClientAudit(ctx, id)
}

// OrgAudit returns an organisation's own entries and those of each of its
// clients, oldest first (ties in client id order); an unknown organisation
// is ErrNotFound.
func (s *Service) OrgAudit(ctx context.Context, slug string) ([]audit.Record, error) {
	if _, err := s.Registry.GetOrg(ctx, slug); err != nil {
		return nil, err
	}
	out, err := s.Registry.OrgAudit(ctx, slug)
	if err != nil {
		return nil, err
	}
	list, err := s.Registry.ListClients(ctx, slug)
	if err != nil {
		return nil, err
	}
	for _, c := range list {
		entries, err := s.Registry.ClientAudit(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		for i := range entries {
			entries[i].ID = c.ID + ":" + entries[i].ID
			entries[i].Org = slug
		}
		out = append(out, entries...)
	}
	// Compared to the millisecond: a client's entries keep no finer time
	// than that, the organisation's do, and an organisation's creation
	// must not sort after its first client's in the same millisecond
	// (TestSecrets); the organisation's own entries (no client id) first.
	slices.SortStableFunc(out, func(a, b audit.Record) int {
		return cmp.Or(a.At.Truncate(time.Millisecond).Compare(b.At.Truncate(time.Millisecond)), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out, nil
}

// Usage reads what the rate limiter counts of each client now (API and
// token requests in the last minute, per second): a read of its window
// keys, no request counted.
func (s *Service) Usage(ctx context.Context, ids []string, now time.Time) ([]clients.Usage, error) {
	return s.Registry.Usage(ctx, ids, now)
}

// UsageHistory reads each client's API and token requests per minute over
// the last hour (clients.RecordUsage samples them, a minute at a time, off
// the request paths).
func (s *Service) UsageHistory(ctx context.Context, ids []string, now time.Time) ([]clients.UsageHistory, error) {
	return s.Registry.UsageHistory(ctx, ids, now)
}

// SeedSandbox creates, idempotently, the sandbox organisation and its demo
// clients.
func (s *Service) SeedSandbox(ctx context.Context) (clients.Org, []clients.SeededClient, error) {
	return s.Registry.SeedSandbox(ctx)
}
