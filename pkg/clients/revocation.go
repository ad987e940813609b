package clients

import (
	"context"
	"time"
)

// RevokeToken revokes one access token (RFC 7009 section 2): from the
// moment it returns without error, the API, the admin API and
// introspection refuse it on every replica. The mark lives until the
// token would have expired (expires), so revocations cost memory only for
// live tokens. Revoking it again changes nothing.
func (s *Store) RevokeToken(ctx context.Context, t TokenRef, expires time.Time) error {
	if !ValidClientID(t.ClientID) || t.ID == "" {
		return Invalidf("token reference")
	}
	ttl := expires.Sub(s.now()) + time.Second
	if ttl <= time.Second { // expired: dead already
		return nil
	}
	what := "revoke a token of client " + t.ClientID
	keys := revokeTokenKeys{Mark: s.revokedTokenKey(t.ClientID, t.ID), Client: s.clientKey(t.ClientID)}
	args := revokeTokenArgs{TTLMS: ttl.Milliseconds(), Exp: expires.Unix()}
	_, ack, err := s.write(ctx, revokeTokenScript, keys.list(), args.list()...)
	if err != nil {
		return unavailable(what, err)
	}
	if !s.confirmed(ack) {
		return s.notReplicated(what, ack)
	}
	return nil
}

// Revoke ends the client for good: token requests are refused and every
// token it holds is dead at once.
func (s *Store) Revoke(ctx context.Context, id string) (Client, error) {
	return s.changeAndRead(ctx, revokeClientScript, "revoke", id, "", "")
}
