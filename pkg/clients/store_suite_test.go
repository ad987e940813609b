package clients_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

var (
	idRE     = regexp.MustCompile(`^svc_[a-z2-7]{24}$`)
	secretRE = regexp.MustCompile(`^svc_cs_[A-Za-z0-9_-]{43}$`)
)

func testCreateOrg(t *testing.T, e *env) {
	got, err := e.store.CreateOrg(ctx(t), clients.OrgSpec{Slug: "acme", Name: "Acme Pharma", Environment: clients.EnvironmentLive})
	if err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	want := clients.Org{Slug: "acme", Name: "Acme Pharma", Environment: clients.EnvironmentLive, CreatedAt: e.clock.Now()}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CreateOrg = %+v, want %+v", got, want)
	}
	read, err := e.store.GetOrg(ctx(t), "acme")
	if err != nil {
		t.Fatalf("GetOrg: %v", err)
	}
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("GetOrg = %+v, want %+v", read, want)
	}

	_, err = e.store.CreateOrg(ctx(t), clients.OrgSpec{Slug: "acme", Name: "Someone else", Environment: clients.EnvironmentSandbox})
	if !errors.Is(err, clients.ErrExists) {
		t.Fatalf("CreateOrg(duplicate slug) = %v, want ErrExists", err)
	}
	read, _ = e.store.GetOrg(ctx(t), "acme")
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("duplicate CreateOrg changed the organisation: %+v", read)
	}

	if _, err := e.store.GetOrg(ctx(t), "nobody"); !errors.Is(err, clients.ErrNotFound) {
		t.Fatalf("GetOrg(unknown) = %v, want ErrNotFound", err)
	}

	audit, err := e.store.OrgAudit(ctx(t), "acme")
	if err != nil {
		t.Fatalf("OrgAudit: %v", err)
	}
	if len(audit) != 1 || audit[0].Event != "org.created" || audit[0].Org != "acme" || !audit[0].At.Equal(e.clock.Now()) {
		t.Fatalf("OrgAudit = %+v, want one org.created entry for acme", audit)
	}
}

func testCreateOrgValidation(t *testing.T, e *env) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		spec clients.OrgSpec
		want []string // substrings of the error; nil: valid
	}{
		{"valid", clients.OrgSpec{Slug: "a1-b2", Name: "A", Environment: clients.EnvironmentLive}, nil},
		{"one character slug", clients.OrgSpec{Slug: "a", Name: "A", Environment: clients.EnvironmentSandbox}, nil},
		{"63 character slug", clients.OrgSpec{Slug: long(63), Name: "A", Environment: clients.EnvironmentLive}, nil},
		{"200 character name", clients.OrgSpec{Slug: "n200", Name: long(200), Environment: clients.EnvironmentLive}, nil},
		{"64 character slug", clients.OrgSpec{Slug: long(64), Name: "A", Environment: clients.EnvironmentLive}, []string{"slug"}},
		{"empty slug", clients.OrgSpec{Slug: "", Name: "A", Environment: clients.EnvironmentLive}, []string{"slug"}},
		{"upper-case slug", clients.OrgSpec{Slug: "Acme", Name: "A", Environment: clients.EnvironmentLive}, []string{`slug "Acme"`}},
		{"leading hyphen", clients.OrgSpec{Slug: "-acme", Name: "A", Environment: clients.EnvironmentLive}, []string{"slug"}},
		{"trailing hyphen", clients.OrgSpec{Slug: "acme-", Name: "A", Environment: clients.EnvironmentLive}, []string{"slug"}},
		{"key-breaking slug", clients.OrgSpec{Slug: "a}b", Name: "A", Environment: clients.EnvironmentLive}, []string{"slug"}},
		{"blank name", clients.OrgSpec{Slug: "acme", Name: "  ", Environment: clients.EnvironmentLive}, []string{"name"}},
		{"201 character name", clients.OrgSpec{Slug: "acme", Name: long(201), Environment: clients.EnvironmentLive}, []string{"name"}},
		{"unknown environment", clients.OrgSpec{Slug: "acme", Name: "A", Environment: "prod"}, []string{`environment "prod"`}},
		{"everything wrong at once", clients.OrgSpec{Slug: "Bad Slug", Name: "", Environment: "staging"},
			[]string{`slug "Bad Slug"`, "name:", `environment "staging"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.store.CreateOrg(ctx(t), tc.spec)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CreateOrg(%+v) = %v, want success", tc.spec, err)
				}
				return
			}
			if !errors.Is(err, clients.ErrInvalid) {
				t.Fatalf("CreateOrg(%+v) = %v, want ErrInvalid", tc.spec, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := e.store.GetOrg(ctx(t), tc.spec.Slug); !errors.Is(err, clients.ErrNotFound) {
				t.Errorf("an invalid organisation was stored: GetOrg = %v", err)
			}
		})
	}
	orgs, err := e.store.ListOrgs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(orgs) != 4 {
		t.Fatalf("ListOrgs holds %d organisations, want the 4 valid ones: %+v", len(orgs), orgs)
	}
}

func testListOrgs(t *testing.T, e *env) {
	if orgs, err := e.store.ListOrgs(ctx(t)); err != nil || len(orgs) != 0 {
		t.Fatalf("ListOrgs on an empty registry = %v, %v", orgs, err)
	}
	zeta := e.org(t, "zeta", clients.EnvironmentLive)
	e.clock.Add(time.Second)
	alpha := e.org(t, "alpha", clients.EnvironmentSandbox)
	e.clock.Add(time.Second)
	mid := e.org(t, "mid", clients.EnvironmentLive)
	// An index entry whose record is missing (a crash between the two
	// writes) is skipped. The index key is documented in doc.go.
	if err := e.rdb.SAdd(ctx(t), e.prefix+"{registry}:orgs", "ghost").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.ListOrgs(ctx(t))
	if err != nil {
		t.Fatalf("ListOrgs: %v", err)
	}
	want := []clients.Org{alpha, mid, zeta}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListOrgs = %+v, want %+v", got, want)
	}
}

func testCreateClient(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentLive)
	seen := map[string]bool{}
	for i, spec := range []clients.ClientSpec{
		{OrgSlug: "acme", Name: "Metrics exporter", Audience: clients.AudiencePharma, Scopes: []string{clients.ScopeProgrammeMetricsRead}},
		{OrgSlug: "acme", Name: "No scopes", Audience: clients.AudiencePSPPartner},
		{OrgSlug: "acme", Name: "Ward", Audience: clients.AudienceHospital, Scopes: clients.AllScopes, RateLimitPerMinute: 500},
	} {
		c, secret, err := e.store.CreateClient(ctx(t), spec)
		if err != nil {
			t.Fatalf("CreateClient(%+v): %v", spec, err)
		}
		if !idRE.MatchString(c.ID) {
			t.Errorf("client id %q does not match %s", c.ID, idRE)
		}
		if !secretRE.MatchString(secret) {
			t.Errorf("secret %q does not match %s", secret, secretRE)
		}
		if seen[c.ID] || seen[secret] {
			t.Fatalf("id or secret repeated: %s %s", c.ID, secret)
		}
		seen[c.ID], seen[secret] = true, true
		rate := spec.RateLimitPerMinute
		if rate == 0 {
			rate = clients.DefaultRateLimitPerMinute
		}
		scopes := spec.Scopes
		if scopes == nil {
			scopes = []string{}
		}
		want := clients.Client{
			ID: c.ID, Name: spec.Name, Audience: spec.Audience,
			OrgSlug: "acme", OrgName: "Org acme", Environment: clients.EnvironmentLive,
			Scopes: scopes, RateLimitPerMinute: rate, TokenRateLimitPerMinute: 30,
			Status: clients.StatusActive, Generation: 1,
			CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now(),
			AuthMethod: clients.AuthClientSecret, Secrets: []clients.SecretInfo{{ID: 1, CreatedAt: e.clock.Now()}},
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("client %d = %+v, want %+v", i, c, want)
		}
		if got, err := e.store.GetClient(ctx(t), c.ID); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GetClient = %+v, %v; want %+v", got, err, want)
		}
		e.clock.Add(time.Millisecond)
	}
	if clients.DefaultRateLimitPerMinute != 120 || clients.DefaultTokenRateLimitPerMinute != 30 {
		t.Fatalf("defaults are %d/%d, the guides say 120/30", clients.DefaultRateLimitPerMinute, clients.DefaultTokenRateLimitPerMinute)
	}
}

func testCreateClientValidation(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentLive)
	base := func(mod func(*clients.ClientSpec)) clients.ClientSpec {
		s := clients.ClientSpec{OrgSlug: "acme", Name: "c", Audience: clients.AudienceHospital}
		mod(&s)
		return s
	}
	tests := []struct {
		name string
		spec clients.ClientSpec
		want []string // substrings of the error; nil: valid
	}{
		{"hospital with every scope", base(func(s *clients.ClientSpec) { s.Scopes = clients.AllScopes }), nil},
		{"pharma with non-patient scopes", base(func(s *clients.ClientSpec) {
			s.Audience = clients.AudiencePharma
			s.Scopes = []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe}
		}), nil},
		{"largest rate limit", base(func(s *clients.ClientSpec) { s.RateLimitPerMinute = clients.MaxRateLimitPerMinute }), nil},
		{"pharma with patients.read", base(func(s *clients.ClientSpec) {
			s.Audience = clients.AudiencePharma
			s.Scopes = []string{clients.ScopePatientsRead}
		}), []string{`scope "patients.read"`, "hospital clients only", "pharma"}},
		{"pharma with referrals.write", base(func(s *clients.ClientSpec) {
			s.Audience = clients.AudiencePharma
			s.Scopes = []string{clients.ScopeProgrammeMetricsRead, clients.ScopeReferralsWrite}
		}), []string{`scope "referrals.write"`, "hospital clients only"}},
		{"psp_partner with patients.read", base(func(s *clients.ClientSpec) {
			s.Audience = clients.AudiencePSPPartner
			s.Scopes = []string{clients.ScopePatientsRead}
		}), []string{`scope "patients.read"`, "hospital clients only", "psp_partner"}},
		{"psp_partner with referrals.write", base(func(s *clients.ClientSpec) {
			s.Audience = clients.AudiencePSPPartner
			s.Scopes = []string{clients.ScopeReferralsWrite}
		}), []string{`scope "referrals.write"`, "hospital clients only"}},
		{"unknown scope", base(func(s *clients.ClientSpec) { s.Scopes = []string{"admin"} }), []string{`scope "admin": unknown`}},
		{"duplicated scope", base(func(s *clients.ClientSpec) {
			s.Scopes = []string{clients.ScopeEventsSubscribe, clients.ScopeEventsSubscribe}
		}), []string{`scope "events.subscribe": given twice`}},
		{"unknown audience", base(func(s *clients.ClientSpec) { s.Audience = "insurer" }), []string{`audience "insurer"`}},
		{"blank name", base(func(s *clients.ClientSpec) { s.Name = " " }), []string{"name:"}},
		{"bad org slug", base(func(s *clients.ClientSpec) { s.OrgSlug = "ACME" }), []string{`organisation "ACME"`}},
		{"negative rate limit", base(func(s *clients.ClientSpec) { s.RateLimitPerMinute = -1 }), []string{"rate limit -1"}},
		{"rate limit too high", base(func(s *clients.ClientSpec) { s.RateLimitPerMinute = clients.MaxRateLimitPerMinute + 1 }), []string{"rate limit"}},
		{"everything wrong at once", clients.ClientSpec{
			OrgSlug: "Not A Slug", Name: "", Audience: clients.AudiencePharma,
			Scopes: []string{"admin", clients.ScopePatientsRead, "admin"}, RateLimitPerMinute: -5,
		}, []string{`organisation "Not A Slug"`, "name:", `scope "admin": unknown`, `scope "patients.read"`, "rate limit -5"}},
	}
	valid := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, secret, err := e.store.CreateClient(ctx(t), tc.spec)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CreateClient = %v, want success", err)
				}
				valid++
				return
			}
			if !errors.Is(err, clients.ErrInvalid) {
				t.Fatalf("CreateClient = %v, want ErrInvalid", err)
			}
			if secret != "" {
				t.Errorf("a secret was returned for an invalid client")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	list, err := e.store.ListClients(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != valid {
		t.Fatalf("ListClients holds %d clients, want only the %d valid ones", len(list), valid)
	}
}

func testCreateClientUnknownOrg(t *testing.T, e *env) {
	_, secret, err := e.store.CreateClient(ctx(t), clients.ClientSpec{OrgSlug: "nobody", Name: "c", Audience: clients.AudiencePharma})
	if !errors.Is(err, clients.ErrNotFound) {
		t.Fatalf("CreateClient(unknown org) = %v, want ErrNotFound", err)
	}
	if secret != "" {
		t.Fatal("a secret was returned for a client that was not created")
	}
	if keys := e.keys(t); len(keys) != 0 {
		t.Fatalf("a failed CreateClient left keys behind: %v", keys)
	}
}

func flip(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}

func testRotateSecret(t *testing.T, e *env) {
	c, oldSecret := e.hospital(t)
	e.clock.Add(time.Minute)
	rotated, newSecret, err := e.store.RotateSecret(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("RotateSecret: %v", err)
	}
	if !secretRE.MatchString(newSecret) || newSecret == oldSecret {
		t.Fatalf("RotateSecret returned secret %q (old %q)", newSecret, oldSecret)
	}
	at := e.clock.Now()
	want := c
	want.Generation = 2
	want.UpdatedAt = at
	want.RotatedAt = &at
	want.Secrets = []clients.SecretInfo{{ID: 2, CreatedAt: at}} // a new secret, with a new id
	if !reflect.DeepEqual(rotated, want) {
		t.Fatalf("RotateSecret = %+v, want %+v", rotated, want)
	}
	if a := e.token(t, c.ID, oldSecret); a.Outcome != clients.BadCredentials {
		t.Error("the old secret still matches after rotation")
	}
	a := e.token(t, c.ID, newSecret)
	if a.Outcome != clients.Authenticated {
		t.Error("the new secret does not match")
	}
	if a.Generation != 2 {
		t.Errorf("credential generation = %d, want 2", a.Generation)
	}

	if _, s, err := e.store.RotateSecret(ctx(t), clients.NewClientID()); !errors.Is(err, clients.ErrNotFound) || s != "" {
		t.Errorf("RotateSecret(unknown) = %q, %v; want ErrNotFound and no secret", s, err)
	}
	if _, _, err := e.store.RotateSecret(ctx(t), "garbage"); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("RotateSecret(malformed) = %v, want ErrNotFound", err)
	}
	if _, err := e.store.Revoke(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	if _, s, err := e.store.RotateSecret(ctx(t), c.ID); !errors.Is(err, clients.ErrRevoked) || s != "" {
		t.Errorf("RotateSecret(revoked) = %q, %v; want ErrRevoked and no secret", s, err)
	}
	// A refused rotation changes nothing.
	got, _ := e.store.GetClient(ctx(t), c.ID)
	if got.Generation != 3 {
		t.Errorf("generation after revoke and refused rotation = %d, want 3", got.Generation)
	}
}

func testRevoke(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	e.clock.Add(time.Hour)
	revoked, err := e.store.Revoke(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	at := e.clock.Now()
	want := c
	want.Status = clients.StatusRevoked
	want.Generation = 2
	want.UpdatedAt = at
	want.RevokedAt = &at
	if !reflect.DeepEqual(revoked, want) {
		t.Fatalf("Revoke = %+v, want %+v", revoked, want)
	}
	if _, err := e.store.Revoke(ctx(t), c.ID); !errors.Is(err, clients.ErrRevoked) {
		t.Fatalf("second Revoke = %v, want ErrRevoked", err)
	}
	if got, _ := e.store.GetClient(ctx(t), c.ID); got.Generation != 2 {
		t.Fatalf("a second revoke moved the generation to %d", got.Generation)
	}
	if a := e.token(t, c.ID, secret); a.Outcome != clients.BadCredentials {
		t.Fatal("revoked client still authenticates")
	}
	if _, err := e.store.Revoke(ctx(t), clients.NewClientID()); !errors.Is(err, clients.ErrNotFound) {
		t.Fatalf("Revoke(unknown) = %v, want ErrNotFound", err)
	}
}

func testSetRateLimits(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	type setter func(id string, n int64) (clients.Client, error)
	for _, s := range []struct {
		name string
		set  setter
		get  func(clients.Client) int64
		def  int64
	}{
		{"SetRateLimit", func(id string, n int64) (clients.Client, error) { return e.store.SetRateLimit(ctx(t), id, n) },
			func(c clients.Client) int64 { return c.RateLimitPerMinute }, 120},
		{"SetTokenRateLimit", func(id string, n int64) (clients.Client, error) { return e.store.SetTokenRateLimit(ctx(t), id, n) },
			func(c clients.Client) int64 { return c.TokenRateLimitPerMinute }, 30},
	} {
		t.Run(s.name, func(t *testing.T) {
			for _, n := range []int64{0, -1, clients.MaxRateLimitPerMinute + 1} {
				if _, err := s.set(c.ID, n); !errors.Is(err, clients.ErrInvalid) {
					t.Errorf("%s(%d) = %v, want ErrInvalid", s.name, n, err)
				}
			}
			if got, _ := e.store.GetClient(ctx(t), c.ID); s.get(got) != s.def {
				t.Fatalf("refused changes moved the limit to %d", s.get(got))
			}
			for _, n := range []int64{1, 777, clients.MaxRateLimitPerMinute} {
				e.clock.Add(time.Second)
				got, err := s.set(c.ID, n)
				if err != nil {
					t.Fatalf("%s(%d): %v", s.name, n, err)
				}
				if s.get(got) != n || !got.UpdatedAt.Equal(e.clock.Now()) || got.Generation != 1 {
					t.Fatalf("%s(%d) = %+v", s.name, n, got)
				}
				if read, _ := e.store.GetClient(ctx(t), c.ID); !reflect.DeepEqual(read, got) {
					t.Fatalf("GetClient = %+v, want %+v", read, got)
				}
			}
			if _, err := s.set(clients.NewClientID(), 10); !errors.Is(err, clients.ErrNotFound) {
				t.Errorf("%s(unknown) = %v, want ErrNotFound", s.name, err)
			}
		})
	}
	if _, err := e.store.Revoke(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, 10); !errors.Is(err, clients.ErrRevoked) {
		t.Errorf("SetRateLimit(revoked) = %v, want ErrRevoked", err)
	}
	if _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, 10); !errors.Is(err, clients.ErrRevoked) {
		t.Errorf("SetTokenRateLimit(revoked) = %v, want ErrRevoked", err)
	}
}

func testGetClient(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	got, err := e.store.GetClient(ctx(t), c.ID)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("GetClient = %+v, %v; want %+v", got, err, c)
	}
	for _, id := range []string{clients.NewClientID(), "nope", "", "{registry}:orgs"} {
		if _, err := e.store.GetClient(ctx(t), id); !errors.Is(err, clients.ErrNotFound) {
			t.Errorf("GetClient(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func testListClients(t *testing.T, e *env) {
	e.org(t, "org-a", clients.EnvironmentLive)
	e.org(t, "org-b", clients.EnvironmentSandbox)
	e.org(t, "org-empty", clients.EnvironmentLive)
	var all, inA, inB []clients.Client
	for i, org := range []string{"org-b", "org-a", "org-a", "org-b", "org-a"} {
		e.clock.Add(time.Second)
		c, _ := e.client(t, clients.ClientSpec{OrgSlug: org, Name: "client " + string(rune('0'+i)), Audience: clients.AudiencePSPPartner})
		all = append(all, c)
		if org == "org-a" {
			inA = append(inA, c)
		} else {
			inB = append(inB, c)
		}
	}
	// A stray index entry (its record never written) is skipped. The index
	// keys are documented in doc.go.
	ghost := clients.NewClientID()
	if err := e.rdb.SAdd(ctx(t), e.prefix+"{registry}:org:org-a:clients", ghost).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.ListClients(ctx(t), "no-such-org"); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("ListClients(no-such-org) error = %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		org  string
		want []clients.Client
	}{{"", all}, {"org-a", inA}, {"org-b", inB}, {"org-empty", []clients.Client{}}} {
		got, err := e.store.ListClients(ctx(t), tc.org)
		if err != nil {
			t.Fatalf("ListClients(%q): %v", tc.org, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ListClients(%q) = %v, want %v (oldest first)", tc.org, ids(got), ids(tc.want))
		}
	}
	// Revoked clients are still listed, with their status.
	if _, err := e.store.Revoke(ctx(t), inA[0].ID); err != nil {
		t.Fatal(err)
	}
	got, _ := e.store.ListClients(ctx(t), "org-a")
	if len(got) != len(inA) || got[0].Status != clients.StatusRevoked {
		t.Fatalf("after revoke, ListClients(org-a) = %+v", got)
	}
}

func ids(cs []clients.Client) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testAudit(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	times := []time.Time{e.clock.Now()}
	step := func(f func() error) {
		t.Helper()
		e.clock.Add(1500 * time.Millisecond)
		times = append(times, e.clock.Now())
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	var newSecret string
	step(func() (err error) { _, newSecret, err = e.store.RotateSecret(ctx(t), c.ID); return })
	step(func() error { _, err := e.store.SetRateLimit(ctx(t), c.ID, 500); return err })
	step(func() error { _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, 7); return err })
	step(func() error { _, err := e.store.Revoke(ctx(t), c.ID); return err })
	// Refused changes leave no entry.
	if _, err := e.store.Revoke(ctx(t), c.ID); !errors.Is(err, clients.ErrRevoked) {
		t.Fatal(err)
	}

	got, err := e.store.ClientAudit(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("ClientAudit: %v", err)
	}
	want := []struct{ event, detail string }{
		{"client.created", "generation=1"},
		{"client.rotate", "generation=2 secret_id=2"},
		{"client.rate_limit", "rate_limit_per_minute=500"},
		{"client.token_rate_limit", "token_rate_limit_per_minute=7"},
		{"client.revoke", "generation=3"},
	}
	if len(got) != len(want) {
		t.Fatalf("ClientAudit has %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Event != w.event || g.Detail != w.detail || g.ClientID != c.ID || !g.At.Equal(times[i]) || g.ID == "" {
			t.Errorf("entry %d = %+v, want event %s detail %q client %s at %v", i, g, w.event, w.detail, c.ID, times[i])
		}
	}
	// The raw audit trails hold no secret and no digest.
	d1, d2 := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(newSecret))
	for _, k := range e.keysWith(t, ":audit") {
		for _, v := range e.dump(t, k) {
			for _, bad := range []string{clients.SecretPrefix, hex.EncodeToString(d1[:]), hex.EncodeToString(d2[:]), string(d1[:]), string(d2[:])} {
				if strings.Contains(v, bad) {
					t.Errorf("audit stream %s holds %q", k, v)
				}
			}
		}
	}
	if got, err := e.store.ClientAudit(ctx(t), clients.NewClientID()); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("ClientAudit(unknown) = %v, %v; want ErrNotFound", got, err)
	}
}

func testNoSecretStored(t *testing.T, e *env) {
	c, oldSecret := e.hospital(t)
	_, newSecret, err := e.store.RotateSecret(ctx(t), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The record holds the digest raw (32 bytes); look for the hex too.
	oldDigest, newDigest := sha256.Sum256([]byte(oldSecret)), sha256.Sum256([]byte(newSecret))
	oldHex, newRaw := hex.EncodeToString(oldDigest[:]), string(newDigest[:])
	keys := e.keys(t)
	if len(keys) == 0 {
		t.Fatal("no keys under the test prefix")
	}
	digestSeen := 0
	for _, k := range keys {
		for _, v := range append([]string{k}, e.dump(t, k)...) {
			switch {
			case strings.Contains(v, clients.SecretPrefix), strings.Contains(v, oldSecret[len(clients.SecretPrefix):]),
				strings.Contains(v, newSecret[len(clients.SecretPrefix):]):
				t.Errorf("key %s holds a secret: %q", k, v)
			case strings.Contains(v, oldHex), strings.Contains(v, string(oldDigest[:])):
				t.Errorf("key %s still holds the digest of the rotated-away secret", k)
			case v == newRaw:
				digestSeen++
			}
		}
	}
	if digestSeen != 1 {
		t.Fatalf("the SHA-256 digest of the current secret appears %d times, want once (in the record)", digestSeen)
	}
}

func testSeedSandbox(t *testing.T, e *env) {
	org, seeded, err := e.store.SeedSandbox(ctx(t))
	if err != nil {
		t.Fatalf("SeedSandbox: %v", err)
	}
	if org.Slug != clients.SandboxOrgSlug || org.Environment != clients.EnvironmentSandbox || org.Name != clients.SandboxOrgName {
		t.Fatalf("sandbox org = %+v", org)
	}
	if len(seeded) != 3 {
		t.Fatalf("SeedSandbox created %d clients, want 3", len(seeded))
	}
	audiences := map[string]clients.Client{}
	for _, sc := range seeded {
		c := sc.Client
		if !secretRE.MatchString(sc.Secret) {
			t.Errorf("first seed: client %s has secret %q", c.ID, sc.Secret)
		}
		if a := e.token(t, c.ID, sc.Secret); a.Outcome != clients.Authenticated {
			t.Errorf("seeded secret of %s does not authenticate (%+v)", c.ID, a)
		}
		if c.Environment != clients.EnvironmentSandbox || c.OrgSlug != clients.SandboxOrgSlug || c.Status != clients.StatusActive {
			t.Errorf("seeded client = %+v", c)
		}
		if _, dup := audiences[c.Audience]; dup {
			t.Errorf("two seeded clients for audience %s", c.Audience)
		}
		audiences[c.Audience] = c
	}
	for _, a := range clients.Audiences {
		c, ok := audiences[a]
		if !ok {
			t.Fatalf("no seeded client for audience %s", a)
		}
		hasPatient := slices.Contains(c.Scopes, clients.ScopePatientsRead) || slices.Contains(c.Scopes, clients.ScopeReferralsWrite)
		if a == clients.AudienceHospital {
			if !slices.Equal(c.Scopes, clients.AllScopes) {
				t.Errorf("hospital demo client scopes = %v, want all", c.Scopes)
			}
		} else if hasPatient {
			t.Errorf("%s demo client holds patient scopes: %v", a, c.Scopes)
		}
	}

	keysBefore := e.keys(t)
	org2, again, err := e.store.SeedSandbox(ctx(t))
	if err != nil {
		t.Fatalf("second SeedSandbox: %v", err)
	}
	if !reflect.DeepEqual(org2, org) {
		t.Errorf("second seed org = %+v, want %+v", org2, org)
	}
	if len(again) != 3 {
		t.Fatalf("second seed returned %d clients, want 3", len(again))
	}
	for i, sc := range again {
		if sc.Secret != "" {
			t.Errorf("second seed returned a secret for %s", sc.Client.ID)
		}
		if !reflect.DeepEqual(sc.Client, seeded[i].Client) {
			t.Errorf("second seed client %d = %+v, want %+v", i, sc.Client, seeded[i].Client)
		}
	}
	if keysAfter := e.keys(t); !slices.Equal(keysAfter, keysBefore) {
		t.Errorf("second seed wrote keys: before %v, after %v", keysBefore, keysAfter)
	}
	list, _ := e.store.ListClients(ctx(t), clients.SandboxOrgSlug)
	if len(list) != 3 {
		t.Errorf("sandbox org holds %d clients after two seeds, want 3", len(list))
	}
}

func testSeedSandboxReplacesRevoked(t *testing.T, e *env) {
	_, first, err := e.store.SeedSandbox(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var pharma clients.Client
	for _, sc := range first {
		if sc.Client.Audience == clients.AudiencePharma {
			pharma = sc.Client
		}
	}
	if _, err := e.store.Revoke(ctx(t), pharma.ID); err != nil {
		t.Fatal(err)
	}
	_, second, err := e.store.SeedSandbox(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, sc := range second {
		switch sc.Client.Audience {
		case clients.AudiencePharma:
			if sc.Client.ID == pharma.ID || sc.Secret == "" || sc.Client.Status != clients.StatusActive {
				t.Errorf("revoked pharma demo client not replaced by a new one: %+v", sc)
			}
		default:
			if sc.Secret != "" || sc.Client.ID != first[i].Client.ID {
				t.Errorf("active demo client recreated: %+v", sc)
			}
		}
	}
}

func testSeedSandboxLiveOrg(t *testing.T, e *env) {
	e.org(t, clients.SandboxOrgSlug, clients.EnvironmentLive)
	if _, _, err := e.store.SeedSandbox(ctx(t)); !errors.Is(err, clients.ErrInvalid) {
		t.Fatalf("SeedSandbox over a live organisation = %v, want ErrInvalid", err)
	}
	if list, _ := e.store.ListClients(ctx(t), clients.SandboxOrgSlug); len(list) != 0 {
		t.Fatalf("demo clients were created in a live organisation: %+v", list)
	}
}
