// Package dpopnonce shares the server nonces of DPoP (RFC 9449 sections 8
// and 9) between every replica of every server: the secret of a
// dpop.NonceSource lives in Redis under one key, `{dpop}:nonce-secret`
// (deploy/docs/redis-keys.md), created with SET NX by whichever replica
// comes first and read by the others, so all of them issue the same nonce
// in a period and accept each other's. Nothing is stored per nonce and no
// request makes a round trip for one: SharedNonces reads the secret at
// start, Watch re-reads it periodically (a secret deleted, or Redis
// replaced, is re-created and adopted by every replica within a period).
//
// The servers turn nonces on with DPOP_NONCES=true (--dpop-nonces,
// pkg/serveconfig); off by default.
package dpopnonce
