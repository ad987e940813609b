package clients

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// lock takes a short Redis lock (SET NX PX), waiting up to ttl for it. It
// expires by itself should the holder die.
func (s *Store) lock(ctx context.Context, key string, ttl time.Duration) (func(), error) {
	token := NewSecret() // any unguessable value
	deadline := time.Now().Add(ttl)
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, ttl).Result()
		if err != nil {
			return nil, unavailable("lock", err)
		}
		if ok {
			keys, args := unlockKeys{Lock: key}, unlockArgs{Token: token}
			return func() { unlockScript.Run(context.WithoutCancel(ctx), s.rdb, keys.list(), args.list()...) }, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s is held by another process", ErrUnavailable, key)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// The simulation organisation (resourceserver/apidocs/guides/sandbox.md;
// scopes-and-audiences.md, rule 5 under Rules).
const (
	SandboxOrgSlug = "sandbox-simulation"
	SandboxOrgName = "Sandbox Simulation Organisation (demo data only)"
)

// sandboxClients is one demo client per audience, holding every scope its
// audience may hold.
var sandboxClients = []ClientSpec{
	{Name: "Demo hospital client", Audience: AudienceHospital, Scopes: AllScopes},
	{Name: "Demo pharma client", Audience: AudiencePharma, Scopes: []string{ScopeProgrammeMetricsRead, ScopeEventsSubscribe}},
	{Name: "Demo PSP partner client", Audience: AudiencePSPPartner, Scopes: []string{ScopeProgrammeMetricsRead, ScopeEventsSubscribe}},
}

// SeededClient is a demo client; Secret is set only when this call created
// it (a secret is shown once).
type SeededClient struct {
	Client Client
	Secret string
}

// SeedSandbox creates, idempotently, the simulation organisation and one
// active demo client per audience. Clients that exist already are returned
// without a secret.
func (s *Store) SeedSandbox(ctx context.Context) (Org, []SeededClient, error) {
	// Concurrent seeds (two replicas starting at once) take turns, so the
	// second finds the first one's clients instead of creating its own.
	unlock, err := s.lock(ctx, s.seedLockKey(), 30*time.Second)
	if err != nil {
		return Org{}, nil, err
	}
	defer unlock()
	org, err := s.CreateOrg(ctx, OrgSpec{Slug: SandboxOrgSlug, Name: SandboxOrgName, Environment: EnvironmentSandbox})
	if errors.Is(err, ErrExists) {
		org, err = s.GetOrg(ctx, SandboxOrgSlug)
	}
	if err != nil {
		return Org{}, nil, err
	}
	if org.Environment != EnvironmentSandbox {
		return Org{}, nil, Invalidf("organisation %s exists with environment %s", org.Slug, org.Environment)
	}
	existing, err := s.ListClients(ctx, SandboxOrgSlug)
	if err != nil {
		return Org{}, nil, err
	}
	var out []SeededClient
	// A client created but not confirmed by the replicas is kept with its
	// secret (the one time it is shown) and reported after the others.
	var unconfirmed error
	for _, spec := range sandboxClients {
		found := false
		for _, c := range existing {
			if c.Name == spec.Name && c.Audience == spec.Audience && c.Status == StatusActive {
				out = append(out, SeededClient{Client: c})
				found = true
				break
			}
		}
		if found {
			continue
		}
		spec.OrgSlug = SandboxOrgSlug
		c, secret, err := s.CreateClient(ctx, spec)
		if errors.Is(err, ErrNotReplicated) {
			unconfirmed = errors.Join(unconfirmed, err)
		} else if err != nil {
			return org, out, err
		}
		out = append(out, SeededClient{Client: c, Secret: secret})
	}
	return org, out, unconfirmed
}
