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
		v, err := rotateSecretScript.Run(ctx, s.rdb, []string{s.clientKey(id), s.clientAudit(id), s.changeNonceKey(id), s.keysKey(id)},
			s.now().UnixMilli(), auditMaxLen, nonce, audit.LineActor(audit.ActorFrom(ctx)), value).Result()
		var r changeReply
		if err == nil {
			err = decodeReply(v, &r)
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
