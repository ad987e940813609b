package main

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
)

// watchWithdrawals keeps the signing-key authority in step with the
// withdrawn signing keys in Redis (`authserver keys withdraw`, or the admin
// API): on every change it reads the key file again (the operator rewrote
// it, perhaps with a new signing key) and makes the file's keys less the
// withdrawn ones the keys in force. Until the first withdrawal the keys
// loaded at start are used as they are.
func watchWithdrawals(ctx context.Context, rdb redis.UniversalClient, prefix, file string, loaded *accesstoken.KeySet, keys *signingkeys.Authority, logger *slog.Logger) *keywithdrawal.Watcher {
	return keywithdrawal.NewStore(rdb, prefix).Watch(ctx, keywithdrawal.WatchOptions{
		Logger: logger,
		OnChange: func(st keywithdrawal.State) {
			ks := loaded
			if len(st.Kids) > 0 {
				fresh, err := accesstoken.LoadKeySet(file)
				if err != nil {
					logger.Error("reload signing keys after a withdrawal; keeping the loaded ones, less the withdrawn", "err", err)
				} else {
					ks = fresh
				}
			}
			if err := keys.Use(ks, st.Kids); err != nil {
				logger.Error("use signing keys", "err", err)
				return
			}
			if st.Withdrawn(ks.SigningKeyID()) {
				logger.Error("the signing key is withdrawn and the key file names no other: token requests get 503 until it does",
					"signing_kid", ks.SigningKeyID())
				return
			}
			if len(st.Kids) > 0 {
				logger.Info("signing keys updated", "signing_kid", ks.SigningKeyID(), "withdrawn_version", st.Version)
			}
		},
	})
}
