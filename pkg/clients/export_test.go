package clients

import (
	"context"

	"github.com/partnerapi/authplatform/pkg/audit"
)

// ChangeTwice runs the rotate-secret change's script twice with one nonce,
// as redisconn.ConfirmedWrite's retry after a broken connection does, and
// returns both generations.
func (s *Store) ChangeTwice(ctx context.Context, id, value string) (int64, int64, error) {
	nonce := newNonce()
	run := func() (int64, error) {
		keys := changeKeys{Client: s.clientKey(id), Audit: s.clientAudit(id), Nonce: s.changeNonceKey(id), PublicKeys: s.keysKey(id)}
		args := changeArgs{At: s.now().UnixMilli(), AuditCap: auditMaxLen, Nonce: nonce, Actor: audit.LineActor(audit.ActorFrom(ctx)), Value: value}
		v, err := rotateSecretScript.Run(ctx, s.rdb, keys.list(), args.list()...).Result()
		var r changeReply
		if err == nil {
			err = r.decode(v)
		}
		return r.Generation, err
	}
	a, err := run()
	if err != nil {
		return 0, 0, err
	}
	b, err := run()
	return a, b, err
}
