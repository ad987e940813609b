package clients

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/audit"
)

// CreateOrg creates an organisation; ErrExists if the slug is taken.
func (s *Store) CreateOrg(ctx context.Context, spec OrgSpec) (Org, error) {
	if err := spec.Validate(); err != nil {
		return Org{}, err
	}
	return s.createOrg(ctx, spec)
}

func (s *Store) createOrg(ctx context.Context, spec OrgSpec) (Org, error) {
	now := s.now().UTC()
	what := "create organisation " + spec.Slug
	idx, idxArgs := indexKeys{Set: s.orgIndex()}, indexArgs{Member: spec.Slug}
	_, idxAck, err := s.write(ctx, indexScript, idx.list(), idxArgs.list()...)
	if err != nil {
		return Org{}, unavailable(what, err)
	}
	entry := audit.Record{At: now, Event: "org.created", Org: spec.Slug, Actor: audit.ActorFrom(ctx)}
	keys := createOrgKeys{Org: s.orgKey(spec.Slug), Audit: s.orgAudit(spec.Slug)}
	args := createOrgArgs{Slug: spec.Slug, Name: spec.Name, Environment: spec.Environment, CreatedAt: formatTime(now),
		AuditCap: auditMaxLen, Nonce: newNonce(), Entry: entry.Fields()}
	cmd, ack, err := s.write(ctx, createOrgScript, keys.list(), args.list()...)
	if err != nil {
		return Org{}, unavailable(what, err)
	}
	var r createOrgReply
	if err := r.decode(cmd.Val()); err != nil {
		return Org{}, unavailable(what, err)
	}
	switch r.Code {
	case createOrgCreated:
	case createOrgTaken:
		return Org{}, refuse(ErrExists, "organisation %q", spec.Slug)
	default:
		return Org{}, unavailable(what, fmt.Errorf("unexpected reply %v", r.Code))
	}
	o := Org{Slug: spec.Slug, Name: spec.Name, Environment: spec.Environment, CreatedAt: now.Truncate(time.Millisecond)}
	if !s.confirmed(idxAck, ack) {
		return o, s.notReplicated(what, idxAck, ack)
	}
	return o, nil
}

// GetOrg reads an organisation; ErrNotFound if there is none.
func (s *Store) GetOrg(ctx context.Context, slug string) (Org, error) {
	m, err := s.rdb.HGetAll(ctx, s.orgKey(slug)).Result()
	if err != nil {
		return Org{}, unavailable("get org", err)
	}
	if len(m) == 0 {
		return Org{}, NotFoundf("organisation %q", slug)
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
