package dpop

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ReplayMargin is added to a replay mark's lifetime: replicas' clocks and
// Redis's may differ a little, and a mark that outlives the last moment its
// proof is accepted costs nothing.
const ReplayMargin = time.Second

// ReplayKey is the Redis key suffix that marks a proof's jti used (RFC 9449
// section 11.1). It is a digest of the key's thumbprint and the jti, so
// that a client's arbitrary jti never makes an arbitrary key and two keys'
// equal jti never collide: 32 hex characters. The caller puts it under the
// client's hash tag, prefix + "{" + clientID + "}:dpop:" + ReplayKey(p),
// and sets it with SET key 1 NX PX ReplayTTL(...) in the script of the
// round trip the request makes anyway; a mark that already existed is a
// replay, refused with ErrReplayed.
func ReplayKey(p Proof) string {
	h := sha256.New()
	h.Write([]byte(p.JKT))
	h.Write([]byte{0})
	h.Write([]byte(p.JTI))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// ReplayTTL is how long a replay mark must live: a proof is accepted while
// its iat is within [now-window, now+leeway], so from its first use for at
// most window+leeway (an iat leeway ahead, used at once, stays acceptable
// until iat+window); ReplayMargin is added. Zero window or leeway mean the
// defaults, as in Input.
func ReplayTTL(window, leeway time.Duration) time.Duration {
	if window <= 0 {
		window = DefaultWindow
	}
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	return window + leeway + ReplayMargin
}
