package clients

import (
	"context"
	"errors"
	"fmt"
)

// The simulation organisation (spec: Scopes, rule 5).
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
	org, err := s.CreateOrg(ctx, OrgSpec{Slug: SandboxOrgSlug, Name: SandboxOrgName, Environment: EnvironmentSandbox})
	if errors.Is(err, ErrExists) {
		org, err = s.GetOrg(ctx, SandboxOrgSlug)
	}
	if err != nil {
		return Org{}, nil, err
	}
	if org.Environment != EnvironmentSandbox {
		return Org{}, nil, fmt.Errorf("%w: organisation %s exists with environment %s", ErrInvalid, org.Slug, org.Environment)
	}
	existing, err := s.ListClients(ctx, SandboxOrgSlug)
	if err != nil {
		return Org{}, nil, err
	}
	var out []SeededClient
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
		if err != nil {
			return Org{}, nil, err
		}
		out = append(out, SeededClient{Client: c, Secret: secret})
	}
	return org, out, nil
}
