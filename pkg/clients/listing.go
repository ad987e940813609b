package clients

import (
	"context"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ListClients lists the clients of one organisation (ErrNotFound if there
// is no such organisation), or of all when orgSlug is empty, oldest first.
func (s *Store) ListClients(ctx context.Context, orgSlug string) ([]Client, error) {
	slugs := []string{orgSlug}
	if orgSlug == "" {
		var err error
		if slugs, err = s.rdb.SMembers(ctx, s.orgIndex()).Result(); err != nil {
			return nil, unavailable("list clients", err)
		}
	} else if _, err := s.GetOrg(ctx, orgSlug); err != nil {
		return nil, err
	}
	var ids []string
	for _, slug := range slugs {
		members, err := s.rdb.SMembers(ctx, s.orgClients(slug)).Result()
		if err != nil {
			return nil, unavailable("list clients", err)
		}
		ids = append(ids, members...)
	}
	out, err := s.readClients(ctx, ids, nil)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Client) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// ErrUnknownAfter refuses a ListClientPage after that names no client of
// the listing (an ErrInvalid refusal).
var ErrUnknownAfter = Invalidf("after: no client of this listing has that id")

// ClientPage is one page of a client listing in client id order.
type ClientPage struct {
	Clients []Client
	// More reports whether clients follow the last one of this page.
	More bool
}

// ListClientPage lists up to limit clients whose ids sort after after ("":
// from the first), of one organisation (ErrNotFound if there is no such
// organisation) or of all when orgSlug is empty, in client id order: an
// order that a client created between two pages cannot shift, so a cursor
// (the last id of a page) never skips or repeats a client. A non-empty
// after that is no client of the listing is ErrUnknownAfter: a page ends
// at a client of the listing, and clients are never deleted, so no page of
// this listing ended there.
func (s *Store) ListClientPage(ctx context.Context, orgSlug, after string, limit int) (ClientPage, error) {
	if limit < 1 {
		return ClientPage{}, Invalidf("limit %d: must be at least 1", limit)
	}
	slugs := []string{orgSlug}
	if orgSlug == "" {
		var err error
		if slugs, err = s.rdb.SMembers(ctx, s.orgIndex()).Result(); err != nil {
			return ClientPage{}, unavailable("list clients", err)
		}
	} else if _, err := s.GetOrg(ctx, orgSlug); err != nil {
		return ClientPage{}, err
	}
	var ids []string
	listed := after == ""
	for _, slug := range slugs {
		members, err := s.rdb.SMembers(ctx, s.orgClients(slug)).Result()
		if err != nil {
			return ClientPage{}, unavailable("list clients", err)
		}
		for _, id := range members {
			if id > after {
				ids = append(ids, id)
			}
			listed = listed || id == after
		}
	}
	if !listed {
		return ClientPage{}, ErrUnknownAfter
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var page ClientPage
	// Index entries whose record was never written (a crash between the
	// two writes of CreateClient) are skipped, so read on until the page
	// is full.
	for len(ids) > 0 && len(page.Clients) < limit {
		batch := ids[:min(len(ids), limit-len(page.Clients))]
		ids = ids[len(batch):]
		var err error
		if page.Clients, err = s.readClients(ctx, batch, page.Clients); err != nil {
			return ClientPage{}, err
		}
	}
	page.More = len(ids) > 0
	return page, nil
}

// readClients reads the records of ids in one pipeline and appends those
// that exist to out.
func (s *Store) readClients(ctx context.Context, ids []string, out []Client) ([]Client, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.clientKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("list clients", err)
	}
	if out == nil {
		out = make([]Client, 0, len(ids))
	}
	for i, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			out = append(out, clientFrom(ids[i], m))
		}
	}
	return out, nil
}
