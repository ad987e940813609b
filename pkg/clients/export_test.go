package clients

import "context"

// ChangeTwice runs one operator change's script twice with one nonce, as
// redisconn.ConfirmedWrite's retry after a broken connection does, and
// returns both generations.
func (s *Store) ChangeTwice(ctx context.Context, id, op, value string) (int64, int64, error) {
	nonce := newNonce()
	run := func() (int64, error) {
		return changeScript.Run(ctx, s.rdb, []string{s.clientKey(id), s.clientAudit(id), s.changeNonceKey(id), s.keysKey(id)},
			op, s.now().UnixMilli(), auditMaxLen, value, nonce, actorDetail(ctx, "")).Int64()
	}
	a, err := run()
	if err != nil {
		return 0, 0, err
	}
	b, err := run()
	return a, b, err
}
