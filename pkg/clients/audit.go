package clients

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strconv"

	"github.com/partnerapi/authplatform/pkg/audit"
)

// auditMaxLen caps each audit trail: an organisation's stream (about, by
// XADD MAXLEN ~) and a client's list (exactly, by LTRIM).
const auditMaxLen = 10000

// Every change is recorded with who made it: the audit.Actor of the
// change's context (audit.WithActor), set by the admin API (the operator
// client, the request id, the address) or the CLI (audit.CLI), in the
// same script as the change. A client's trail is a list of audit.Record
// lines, an organisation's a stream of audit.Record fields.

// ClientAudit returns a client's audit records, oldest first (the last
// auditMaxLen are kept); ID is the record's place, 1 the oldest kept.
func (s *Store) ClientAudit(ctx context.Context, id string) ([]audit.Record, error) {
	if !ValidClientID(id) {
		return nil, NotFoundf("client %q", id)
	}
	lines, err := s.rdb.LRange(ctx, s.clientAudit(id), 0, -1).Result()
	if err != nil {
		return nil, unavailable("read audit", err)
	}
	if len(lines) == 0 {
		if _, err := s.GetClient(ctx, id); err != nil {
			return nil, err
		}
	}
	out := make([]audit.Record, 0, len(lines))
	for i, l := range lines {
		r := audit.FromLine(strconv.Itoa(i+1), l)
		r.ClientID = id
		out = append(out, r)
	}
	return out, nil
}

// OrgAudit returns an organisation's own audit records, oldest first.
func (s *Store) OrgAudit(ctx context.Context, slug string) ([]audit.Record, error) {
	msgs, err := s.rdb.XRange(ctx, s.orgAudit(slug), "-", "+").Result()
	if err != nil {
		return nil, unavailable("read audit", err)
	}
	out := make([]audit.Record, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, audit.FromFields(m.ID, m.Values))
	}
	return out, nil
}

// newNonce returns 128 random bits, base64url: what a write script keeps to
// know itself when a retry runs it again.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
