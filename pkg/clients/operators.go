package clients

import (
	"context"
	"errors"
)

// OperatorSpec is what an operator gives to create an operator client.
type OperatorSpec struct {
	Name string
	// ReadOnly gives admin.read only; otherwise admin.read and admin.write.
	ReadOnly bool
}

// CreateOperator creates an operator client, a caller of the admin API, in
// the operator organisation (made on first use), and returns it with its
// secret. It holds admin.read, and admin.write unless ReadOnly.
func (s *Store) CreateOperator(ctx context.Context, spec OperatorSpec) (Client, string, error) {
	if _, err := s.GetOrg(ctx, OperatorOrgSlug); errors.Is(err, ErrNotFound) {
		_, err := s.createOrg(ctx, OrgSpec{Slug: OperatorOrgSlug, Name: "Operators", Environment: EnvironmentLive})
		if err != nil && !errors.Is(err, ErrExists) {
			return Client{}, "", err
		}
	} else if err != nil {
		return Client{}, "", err
	}
	scopes := []string{ScopeAdminRead}
	if !spec.ReadOnly {
		scopes = append(scopes, ScopeAdminWrite)
	}
	return s.CreateClient(ctx, ClientSpec{OrgSlug: OperatorOrgSlug, Name: spec.Name, Audience: AudienceOperator,
		Scopes: scopes, RateLimitPerMinute: DefaultRateLimitPerMinute})
}
