package operations_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
	"github.com/partnerapi/authplatform/pkg/jwksuri"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// fixture is the operations on the test Redis under a key prefix of the
// test's own, and the registry the token service reads (Authenticate).
type fixture struct {
	t           *testing.T
	ctx         context.Context
	ops         *operations.Service
	store       *clients.Store
	withdrawals *keywithdrawal.Store
}

// hosts resolves the jwks_uri hosts of the tests: a partner's public
// address and one inside a private network.
type hosts struct{}

func (hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "keys.partner.example":
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	case "internal.example":
		return []netip.Addr{netip.MustParseAddr("10.0.0.8")}, nil
	}
	return nil, errors.New("no such host")
}

// newFixture opens the operations as both doors do: the registry and the
// withdrawals waiting for confirm's replicas.
func newFixture(t *testing.T, confirm redisconn.Confirmation) *fixture {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	store := clients.NewStore(rdb, prefix, nil)
	store.ConfirmWrites(confirm)
	withdrawals := keywithdrawal.NewStore(rdb, prefix)
	withdrawals.ConfirmWrites(confirm)
	return &fixture{t: t, ctx: audit.WithActor(t.Context(), audit.CLI), store: clients.NewStore(rdb, prefix, nil), withdrawals: withdrawals,
		ops: &operations.Service{Registry: store, Withdrawals: withdrawals, JWKS: jwksuri.Policy{Resolver: hosts{}}}}
}

// org creates an organisation.
func (f *fixture) org(slug string) clients.Org {
	f.t.Helper()
	o, err := f.ops.CreateOrg(f.ctx, clients.OrgSpec{Slug: slug, Name: "Org " + slug, Environment: clients.EnvironmentLive})
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// client creates a secret client of org.
func (f *fixture) client(org string) operations.WithSecret {
	f.t.Helper()
	c, err := f.ops.CreateClient(f.ctx, clients.ClientSpec{OrgSlug: org, Name: "ERP", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeProgrammeMetricsRead}})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// authenticates reports whether secret authenticates client id on the
// token service's own path.
func (f *fixture) authenticates(id, secret string) bool {
	f.t.Helper()
	a, err := f.store.Authenticate(f.ctx, clients.Attempt{ClientID: id, Secret: secret, Address: "192.0.2.1", FailureLimit: 60})
	if err != nil {
		f.t.Fatal(err)
	}
	return a.Outcome == clients.Authenticated
}

// wantErr fails unless err is each of targets (errors.Is) and reads want
// ("" skips the text).
func wantErr(t *testing.T, what string, err error, want string, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("%s: %v, want it to be %v", what, err, target)
		}
	}
	if err == nil || (want != "" && err.Error() != want) {
		t.Errorf("%s: %v, want %q", what, err, want)
	}
}

func TestOrgs(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	o := f.org("acme")
	if o.Slug != "acme" || o.Name != "Org acme" || o.Environment != clients.EnvironmentLive || o.CreatedAt.IsZero() {
		t.Errorf("created %+v", o)
	}
	if got, err := f.ops.GetOrg(f.ctx, "acme"); err != nil || got != o {
		t.Errorf("GetOrg: %+v %v, want %+v", got, err, o)
	}
	if list, err := f.ops.ListOrgs(f.ctx); err != nil || !slices.Equal(list, []clients.Org{o}) {
		t.Errorf("ListOrgs: %+v %v", list, err)
	}
	_, err := f.ops.CreateOrg(f.ctx, clients.OrgSpec{Slug: "acme", Name: "Again", Environment: clients.EnvironmentLive})
	wantErr(t, "the same slug again", err, "", clients.ErrExists)
	_, err = f.ops.CreateOrg(f.ctx, clients.OrgSpec{Slug: "Bad Slug", Name: "x\x1b[2J", Environment: "prod"})
	wantErr(t, "a bad organisation", err, "", operations.ErrInvalid)
	for _, want := range []string{`slug "Bad Slug"`, "name: character U+001B", `environment "prod"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a bad organisation: %v lacks %q", err, want)
		}
	}
	_, err = f.ops.GetOrg(f.ctx, "nobody")
	wantErr(t, "GetOrg of an unknown organisation", err, "", clients.ErrNotFound)
	// An unknown organisation is an error, never an empty listing.
	_, err = f.ops.ListClients(f.ctx, "nobody")
	wantErr(t, "ListClients of an unknown organisation", err, "", clients.ErrNotFound)
	_, err = f.ops.OrgAudit(f.ctx, "nobody")
	wantErr(t, "OrgAudit of an unknown organisation", err, "", clients.ErrNotFound)
	if list, err := f.ops.ListClients(f.ctx, "acme"); err != nil || len(list) != 0 {
		t.Errorf("ListClients of an organisation without clients: %v %v", list, err)
	}
}

func TestCreateClient(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	c := f.client("acme")
	if !strings.HasPrefix(c.ClientSecret, "svc_cs_") || c.SecretID != 0 || c.AuthMethod != clients.AuthClientSecret ||
		c.RateLimitPerMinute != clients.DefaultRateLimitPerMinute || c.TokenRateLimitPerMinute != clients.DefaultTokenRateLimitPerMinute ||
		c.Generation != 1 || c.Status != clients.StatusActive || c.OrgSlug != "acme" {
		t.Errorf("created %+v", c)
	}
	if !f.authenticates(c.ID, c.ClientSecret) {
		t.Error("the new secret does not authenticate")
	}
	got, err := f.ops.GetClient(f.ctx, c.ID)
	if err != nil || got.ID != c.ID || got.Name != "ERP" {
		t.Errorf("GetClient: %+v %v", got, err)
	}
	for _, tc := range []struct {
		what string
		spec clients.ClientSpec
		want string
	}{
		{"a limit below 1", clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudiencePharma, RateLimitPerMinute: -1},
			"invalid input: rate limit -1: a limit must be at least 1 request per minute"},
		{"a limit above the most", clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudiencePharma, RateLimitPerMinute: clients.MaxRateLimitPerMinute + 1},
			"invalid input: rate limit 100000001: a limit must be at most 100000000 requests per minute"},
		{"an operator audience", clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudienceOperator},
			"invalid input: operator clients are made with 'authserver operators create', not as partner clients"},
		{"the operator organisation", clients.ClientSpec{OrgSlug: clients.OperatorOrgSlug, Name: "n", Audience: clients.AudiencePharma},
			"invalid input: operator clients are made with 'authserver operators create', not as partner clients"},
		// Issue 59 point 14: the scopes are said, as the CLI's --scopes is
		// required; an empty list is a client with no scope.
		{"no scopes given", clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudiencePharma},
			"invalid input: scopes are required: list the client's scopes (an empty list makes a client with no scope)"},
	} {
		w, err := f.ops.CreateClient(f.ctx, tc.spec)
		wantErr(t, tc.what, err, tc.want, operations.ErrInvalid)
		if w.ID != "" || w.ClientSecret != "" {
			t.Errorf("%s: made %+v", tc.what, w)
		}
	}
	_, err = f.ops.CreateClient(f.ctx, clients.ClientSpec{OrgSlug: "nobody", Name: "n", Audience: clients.AudiencePharma, Scopes: []string{}})
	wantErr(t, "a client of an unknown organisation", err, "", clients.ErrNotFound)
	if list, err := f.ops.ListClients(f.ctx, "acme"); err != nil || len(list) != 1 || list[0].ID != c.ID {
		t.Errorf("refused clients were made: %v %v", list, err)
	}
	op, err := f.ops.CreateOperator(f.ctx, clients.OperatorSpec{Name: "portal", ReadOnly: true})
	if err != nil || op.Audience != clients.AudienceOperator || !slices.Equal(op.Scopes, []string{clients.ScopeAdminRead}) || !f.authenticates(op.ID, op.ClientSecret) {
		t.Errorf("CreateOperator: %+v %v", op, err)
	}
}

// Rotation, a second secret and its retirement: each secret authenticates
// exactly while it is the client's.
func TestSecrets(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	c := f.client("acme")
	r, err := f.ops.RotateSecret(f.ctx, c.ID)
	if err != nil || r.ClientSecret == "" || r.ClientSecret == c.ClientSecret || r.Generation != 2 {
		t.Fatalf("RotateSecret: %+v %v", r, err)
	}
	if f.authenticates(c.ID, c.ClientSecret) || !f.authenticates(c.ID, r.ClientSecret) {
		t.Error("after rotation: the old secret works, or the new one does not")
	}
	a, err := f.ops.AddSecret(f.ctx, c.ID)
	if err != nil || a.ClientSecret == "" || len(a.Secrets) != 2 || a.SecretID != a.Secrets[1].ID {
		t.Fatalf("AddSecret: %+v %v", a, err)
	}
	if !f.authenticates(c.ID, r.ClientSecret) || !f.authenticates(c.ID, a.ClientSecret) {
		t.Error("with two secrets, one does not authenticate")
	}
	_, err = f.ops.AddSecret(f.ctx, c.ID)
	wantErr(t, "a third secret", err, "", clients.ErrConflict)
	first := a.Secrets[0].ID
	left, err := f.ops.RetireSecret(f.ctx, c.ID, first)
	if err != nil || len(left.Secrets) != 1 || left.Secrets[0].ID != a.SecretID {
		t.Fatalf("RetireSecret: %+v %v", left, err)
	}
	if f.authenticates(c.ID, r.ClientSecret) || !f.authenticates(c.ID, a.ClientSecret) {
		t.Error("after retirement: the retired secret works, or the other does not")
	}
	_, err = f.ops.RetireSecret(f.ctx, c.ID, a.SecretID)
	wantErr(t, "retiring the only secret", err, "", clients.ErrConflict)
	_, err = f.ops.RotateSecret(f.ctx, "svc_ci_nobody")
	wantErr(t, "rotating an unknown client", err, "", clients.ErrNotFound)
	entries, err := f.ops.ClientAudit(f.ctx, c.ID)
	if err != nil || len(entries) != 4 || entries[0].Event != "client.created" {
		t.Errorf("ClientAudit: %+v %v, want created, rotated, added, retired", entries, err)
	}
	for _, e := range entries {
		if e.Actor != audit.CLI || e.ClientID != c.ID {
			t.Errorf("audit entry %+v: not the CLI's change of %s", e, c.ID)
		}
	}
	_, err = f.ops.ClientAudit(f.ctx, "svc_ci_nobody")
	wantErr(t, "the audit of an unknown client", err, "", clients.ErrNotFound)
	trail, err := f.ops.OrgAudit(f.ctx, "acme")
	if err != nil || len(trail) != 5 || trail[0].Event != "org.created" || trail[1].ID != c.ID+":"+entries[0].ID || trail[1].Org != "acme" {
		t.Errorf("OrgAudit: %+v %v, want the organisation's entry, then its client's", trail, err)
	}
}

// A revoked client authenticates no more and cannot be changed.
func TestRevoke(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	c := f.client("acme")
	r, err := f.ops.Revoke(f.ctx, c.ID)
	if err != nil || r.Status != clients.StatusRevoked || r.RevokedAt == nil {
		t.Fatalf("Revoke: %+v %v", r, err)
	}
	if f.authenticates(c.ID, c.ClientSecret) {
		t.Error("a revoked client authenticates")
	}
	_, err = f.ops.RotateSecret(f.ctx, c.ID)
	wantErr(t, "rotating a revoked client", err, "", clients.ErrRevoked)
	_, err = f.ops.SetRateLimit(f.ctx, c.ID, 10, false)
	wantErr(t, "a limit for a revoked client", err, "", clients.ErrRevoked)
	_, err = f.ops.Revoke(f.ctx, "svc_ci_nobody")
	wantErr(t, "revoking an unknown client", err, "", clients.ErrNotFound)
}

// Limits: one rule (CheckLimit) for both, each set on its own.
func TestLimits(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	c := f.client("acme")
	got, err := f.ops.SetRateLimit(f.ctx, c.ID, 500, false)
	if err != nil || got.RateLimitPerMinute != 500 || got.TokenRateLimitPerMinute != clients.DefaultTokenRateLimitPerMinute {
		t.Errorf("SetRateLimit API: %+v %v", got, err)
	}
	got, err = f.ops.SetRateLimit(f.ctx, c.ID, 40, true)
	if err != nil || got.RateLimitPerMinute != 500 || got.TokenRateLimitPerMinute != 40 {
		t.Errorf("SetRateLimit token: %+v %v", got, err)
	}
	for _, n := range []int64{0, -5, clients.MaxRateLimitPerMinute + 1} {
		for _, token := range []bool{false, true} {
			_, err := f.ops.SetRateLimit(f.ctx, c.ID, n, token)
			wantErr(t, "SetRateLimit out of range", err, operations.CheckLimit("rate limit", n).Error(), operations.ErrInvalid)
		}
	}
	if got, err := f.ops.GetClient(f.ctx, c.ID); err != nil || got.RateLimitPerMinute != 500 || got.TokenRateLimitPerMinute != 40 {
		t.Errorf("refused limits changed the client: %+v %v", got, err)
	}
	if err := operations.CheckLimit("--rate-limit", 1); err != nil {
		t.Errorf("CheckLimit(1): %v", err)
	}
	if err := operations.CheckLimit("--rate-limit", clients.MaxRateLimitPerMinute); err != nil {
		t.Errorf("CheckLimit(max): %v", err)
	}
	_, err = f.ops.SetRateLimit(f.ctx, "svc_ci_nobody", 10, false)
	wantErr(t, "a limit for an unknown client", err, "", clients.ErrNotFound)
}

func TestDPoPBound(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	c := f.client("acme")
	for _, bound := range []bool{true, false} {
		got, err := f.ops.SetDPoPBound(f.ctx, c.ID, bound)
		if err != nil || got.DPoPBound != bound {
			t.Errorf("SetDPoPBound(%v): %+v %v", bound, got, err)
		}
		if read, err := f.ops.GetClient(f.ctx, c.ID); err != nil || read.DPoPBound != bound {
			t.Errorf("after SetDPoPBound(%v): %+v %v", bound, read, err)
		}
	}
	_, err := f.ops.SetDPoPBound(f.ctx, "svc_ci_nobody", true)
	wantErr(t, "an unknown client", err, "", clients.ErrNotFound)
}

// A private_key_jwt client's keys: registered as given, a jwks_uri only
// where the token service would fetch it, and replaced by RotateKeys.
func TestKeysRegistration(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	jwks := assertiontest.JWKS(t, assertiontest.NewKey(t, "k1", jwa.ES256()))
	spec := clients.ClientSpec{OrgSlug: "acme", Name: "keyed", Audience: clients.AudienceHospital, Scopes: []string{clients.ScopePatientsRead},
		Keys: &clients.ClientKeySource{JWKS: jwks}}
	c, err := f.ops.CreateClient(f.ctx, spec)
	if err != nil || c.ClientSecret != "" || c.AuthMethod != clients.AuthPrivateKeyJWT || c.KeysVersion != 1 || len(c.Secrets) != 0 {
		t.Fatalf("a client with a JWK set: %+v %v", c, err)
	}
	_, err = f.ops.RotateSecret(f.ctx, c.ID)
	wantErr(t, "rotating the secret of a keyed client", err, "", clients.ErrConflict)

	spec.Keys = &clients.ClientKeySource{URL: "https://internal.example/jwks.json"}
	_, err = f.ops.CreateClient(f.ctx, spec)
	wantErr(t, "a jwks_uri in a private network", err,
		`invalid input: jwks_uri "https://internal.example/jwks.json": the token service does not fetch from internal.example: address 10.0.0.8 is private-use (RFC 1918) (JWKS_URL_ALLOW_PRIVATE=true allows it)`,
		operations.ErrInvalid)
	spec.Keys = &clients.ClientKeySource{URL: "https://nowhere.example/jwks.json"}
	_, err = f.ops.CreateClient(f.ctx, spec)
	wantErr(t, "a jwks_uri that does not resolve", err, "", operations.ErrInvalid)
	spec.Keys = &clients.ClientKeySource{URL: "https://keys.partner.example/jwks.json"}
	u, err := f.ops.CreateClient(f.ctx, spec)
	if err != nil || u.JWKSURI != "https://keys.partner.example/jwks.json" || u.KeysVersion != 1 {
		t.Fatalf("a client with a public jwks_uri: %+v %v", u, err)
	}
	if list, err := f.ops.ListClients(f.ctx, "acme"); err != nil || len(list) != 2 {
		t.Errorf("refused registrations made clients: %d %v", len(list), err)
	}

	_, err = f.ops.RotateKeys(f.ctx, u.ID, clients.ClientKeySource{URL: "https://internal.example/jwks.json"})
	wantErr(t, "rotating to a jwks_uri in a private network", err, "", operations.ErrInvalid)
	if got, err := f.ops.GetClient(f.ctx, u.ID); err != nil || got.KeysVersion != 1 || got.JWKSURI != "https://keys.partner.example/jwks.json" {
		t.Errorf("a refused rotation changed the keys: %+v %v", got, err)
	}
	r, err := f.ops.RotateKeys(f.ctx, u.ID, clients.ClientKeySource{JWKS: jwks})
	if err != nil || r.KeysVersion != 2 || r.JWKSURI != "" {
		t.Errorf("RotateKeys: %+v %v", r, err)
	}
	_, err = f.ops.RotateKeys(f.ctx, u.ID, clients.ClientKeySource{JWKS: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"hmac"}]}`)})
	wantErr(t, "rotating to a secret key", err, "", operations.ErrInvalid)
}

func TestListClientPage(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	f.org("acme")
	var ids []string
	for range 3 {
		ids = append(ids, f.client("acme").ID)
	}
	slices.Sort(ids)
	p, err := f.ops.ListClientPage(f.ctx, "acme", "", 2)
	if err != nil || len(p.Clients) != 2 || p.Clients[0].ID != ids[0] || p.Clients[1].ID != ids[1] {
		t.Fatalf("first page: %+v %v", p, err)
	}
	p, err = f.ops.ListClientPage(f.ctx, "acme", ids[1], 2)
	if err != nil || len(p.Clients) != 1 || p.Clients[0].ID != ids[2] {
		t.Errorf("second page: %+v %v", p, err)
	}
	for _, limit := range []int{0, operations.MaxPageSize + 1} {
		_, err := f.ops.ListClientPage(f.ctx, "acme", "", limit)
		wantErr(t, "a page size out of range", err, "", operations.ErrInvalid)
	}
}

// Seeding the sandbox is idempotent: the second run makes nothing and
// shows no secret.
func TestSeedSandbox(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	o, first, err := f.ops.SeedSandbox(f.ctx)
	if err != nil || o.Environment != clients.EnvironmentSandbox || len(first) != len(clients.Audiences) {
		t.Fatalf("first seeding: %+v %d %v", o, len(first), err)
	}
	for _, s := range first {
		if s.Secret == "" || !f.authenticates(s.Client.ID, s.Secret) {
			t.Errorf("seeded %s: no working secret", s.Client.ID)
		}
	}
	o2, again, err := f.ops.SeedSandbox(f.ctx)
	if err != nil || o2 != o || len(again) != len(first) {
		t.Fatalf("second seeding: %+v %d %v", o2, len(again), err)
	}
	for i, s := range again {
		if s.Client.ID != first[i].Client.ID || s.Secret != "" {
			t.Errorf("second seeding made or showed %s (secret %q)", s.Client.ID, s.Secret)
		}
	}
	if list, err := f.ops.ListClients(f.ctx, o.Slug); err != nil || len(list) != len(first) {
		t.Errorf("%d sandbox clients after two seedings: %v", len(list), err)
	}
}

// A change the replicas did not confirm comes back with its result and
// clients.ErrNotReplicated (a key withdrawal: keywithdrawal.ErrNotReplicated):
// it took effect on the primary, and a new secret is the one that works.
func TestNotReplicated(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{Replicas: 2, Timeout: 50 * time.Millisecond})
	_, err := f.ops.CreateOrg(f.ctx, clients.OrgSpec{Slug: "acme", Name: "Acme", Environment: clients.EnvironmentLive})
	wantErr(t, "an unconfirmed organisation", err, "", clients.ErrNotReplicated)
	c, err := f.ops.CreateClient(f.ctx, clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudiencePharma, Scopes: []string{}})
	wantErr(t, "an unconfirmed client", err, "", clients.ErrNotReplicated)
	if c.ClientSecret == "" || !f.authenticates(c.ID, c.ClientSecret) {
		t.Fatalf("an unconfirmed client came back without its working secret: %+v", c)
	}
	r, err := f.ops.RotateSecret(f.ctx, c.ID)
	wantErr(t, "an unconfirmed rotation", err, "", clients.ErrNotReplicated)
	if r.ClientSecret == "" || !f.authenticates(c.ID, r.ClientSecret) || f.authenticates(c.ID, c.ClientSecret) {
		t.Errorf("an unconfirmed rotation: the new secret does not work, or the old one does")
	}
	a, err := f.ops.AddSecret(f.ctx, c.ID)
	wantErr(t, "an unconfirmed addition", err, "", clients.ErrNotReplicated)
	if a.ClientSecret == "" || a.SecretID == 0 || !f.authenticates(c.ID, a.ClientSecret) {
		t.Errorf("an unconfirmed addition came back without its working secret: %+v", a)
	}
	keys := keySet{signing: "k1", published: []string{"k1", "k2"}}
	v, err := f.ops.WithdrawKey(f.ctx, "k2", keys)
	wantErr(t, "an unconfirmed withdrawal", err, "", keywithdrawal.ErrNotReplicated)
	if v != 1 {
		t.Errorf("an unconfirmed withdrawal: version %d, want 1", v)
	}
	if kids, err := f.ops.Withdrawn(f.ctx); err != nil || !slices.Equal(kids, []string{"k2"}) {
		t.Errorf("withdrawn after an unconfirmed withdrawal: %v %v", kids, err)
	}
}

// TestClientAuditPage: a client's trail in pages, oldest first, each
// page's mark starting the next; filtered by operator; and a mark still
// finds its place once the oldest entries were trimmed away meanwhile.
func TestClientAuditPage(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	clock := testclock.New(time.Now())
	store := clients.NewStore(rdb, prefix, func() time.Time { clock.Add(time.Millisecond); return clock.Now() })
	ops := &operations.Service{Registry: store}
	cli := audit.WithActor(t.Context(), audit.CLI)
	if _, err := ops.CreateOrg(cli, clients.OrgSpec{Slug: "paged", Name: "Paged", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	c, err := ops.CreateClient(cli, clients.ClientSpec{OrgSlug: "paged", Name: "ERP", Audience: clients.AudiencePharma, Scopes: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	one := audit.WithActor(t.Context(), audit.Actor{Operator: "svc_ci_one", RequestID: "r1", Address: "192.0.2.1"})
	two := audit.WithActor(t.Context(), audit.Actor{Operator: "svc_ci_two", RequestID: "r2", Address: "192.0.2.2"})
	for i, ctx := range []context.Context{one, two, one, two, one} {
		if _, err := ops.SetRateLimit(ctx, c.ID, int64(100+i), false); err != nil {
			t.Fatal(err)
		}
	}
	pages := func(operator string, limit int) [][]string {
		var out [][]string
		after := ""
		for range 10 {
			p, err := ops.ClientAuditPage(t.Context(), c.ID, operator, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range p.Records {
				ids = append(ids, r.ID)
			}
			out = append(out, ids)
			if !p.More {
				return out
			}
			after = operations.AuditMark(p.Records[len(p.Records)-1])
		}
		t.Fatal("no last page")
		return nil
	}
	if got := fmt.Sprint(pages("", 2)); got != "[[1 2] [3 4] [5 6]]" {
		t.Errorf("pages of 2: %s", got)
	}
	if got := fmt.Sprint(pages("svc_ci_one", 2)); got != "[[2 4] [6]]" {
		t.Errorf("svc_ci_one's pages of 2: %s", got)
	}
	if got := fmt.Sprint(pages("", 0)); got != "[[1 2 3 4 5 6]]" {
		t.Errorf("the whole trail: %s", got)
	}
	first, err := ops.ClientAuditPage(t.Context(), c.ID, "", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	mark := operations.AuditMark(first.Records[2]) // the third entry
	whole, err := ops.ClientAuditPage(t.Context(), c.ID, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The two oldest trimmed away (as LTRIM does past the cap): every
	// place moves down by two, and the mark still starts at the fourth.
	if err := rdb.LPopCount(t.Context(), prefix+"{"+c.ID+"}:audit", 2).Err(); err != nil {
		t.Fatal(err)
	}
	p, err := ops.ClientAuditPage(t.Context(), c.ID, "", mark, 10)
	if err != nil || len(p.Records) != 3 {
		t.Fatalf("after a trim: %+v %v", p, err)
	}
	for i, r := range p.Records {
		if want := whole.Records[3+i]; !r.At.Equal(want.At) || r.Detail != want.Detail || r.ID != fmt.Sprint(2+i) {
			t.Errorf("after a trim, entry %d: %+v, want %+v at place %d", i, r, want, 2+i)
		}
	}
	for _, bad := range []string{"x", "0.1", "1", "1.x"} {
		_, err := ops.ClientAuditPage(t.Context(), c.ID, "", bad, 2)
		wantErr(t, "mark "+bad, err, "", clients.ErrInvalid)
	}
	_, err = ops.ClientAuditPage(t.Context(), "svc_ci_nobody", "", "", 2)
	wantErr(t, "an unknown client's page", err, "", clients.ErrNotFound)
}
