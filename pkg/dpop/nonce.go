package dpop

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Nonce sources (RFC 9449 section 8 at the authorization server, section 9
// at a resource server).
const (
	// MinNonceSecret is the shortest secret a NonceSource takes: 256 bits.
	MinNonceSecret = 32
	// DefaultNoncePeriod is how often the nonce changes. A nonce is
	// accepted in its period and the next, so for between one and two
	// periods: long enough that a client rarely meets a use_dpop_nonce
	// twice in a row, short enough that a proof made in advance is stale
	// soon.
	DefaultNoncePeriod = 5 * time.Minute
	// nonceMACBytes is the length of a nonce's MAC: 128 bits.
	nonceMACBytes = 16
	// nonceBytes is a nonce's length before encoding: the period number
	// (8 bytes, big-endian) and the MAC.
	nonceBytes = 8 + nonceMACBytes
)

// NonceSource issues and checks stateless server nonces: a nonce is the
// number of the period it was issued in and an HMAC-SHA256 of that number
// under a secret, base64url-encoded (32 characters, all of them NQCHAR as
// section 8.1 requires). Every replica that holds the same secret issues
// the same nonce in a period and accepts the others': nothing is stored
// per nonce, and no round trip is needed to check one. The secret is
// shared through Redis (package dpopnonce), never sent.
//
// Valid accepts the current period's nonce and the previous one's, so a
// nonce handed out just before a rotation still works; and the next
// period's within DefaultLeeway of its start, for a replica whose clock
// runs a little ahead. A NonceSource is safe for concurrent use.
type NonceSource struct {
	secret []byte
	period time.Duration
}

var _ NonceChecker = (*NonceSource)(nil)

// NewNonceSource returns a source for secret (at least MinNonceSecret
// bytes, copied) that changes its nonce every period (0:
// DefaultNoncePeriod; at least a second).
func NewNonceSource(secret []byte, period time.Duration) (*NonceSource, error) {
	if len(secret) < MinNonceSecret {
		return nil, errors.New("dpop: the nonce secret must be at least 32 bytes")
	}
	if period == 0 {
		period = DefaultNoncePeriod
	}
	if period < time.Second {
		return nil, errors.New("dpop: the nonce period must be at least a second")
	}
	return &NonceSource{secret: append([]byte(nil), secret...), period: period}, nil
}

// Nonce is the nonce of now's period, for a DPoP-Nonce header.
func (s *NonceSource) Nonce(now time.Time) string {
	var buf [nonceBytes]byte
	s.make(buf[:], s.counter(now))
	return base64.RawURLEncoding.EncodeToString(buf[:])
}

// Valid reports whether nonce is the nonce of now's period or of the
// previous one, or of the next one within DefaultLeeway of its start. The
// MAC is compared in constant time.
func (s *NonceSource) Valid(nonce string, now time.Time) bool {
	var got [nonceBytes]byte
	if base64.RawURLEncoding.EncodedLen(nonceBytes) != len(nonce) {
		return false
	}
	if n, err := base64.RawURLEncoding.Strict().Decode(got[:], []byte(nonce)); err != nil || n != nonceBytes {
		return false
	}
	c := binary.BigEndian.Uint64(got[:8])
	cur := s.counter(now)
	switch {
	case c == cur, c+1 == cur:
	case c == cur+1 && s.counter(now.Add(DefaultLeeway)) == c:
	default:
		return false
	}
	var want [nonceBytes]byte
	s.make(want[:], c)
	return hmac.Equal(got[8:], want[8:])
}

// counter is the number of now's period since the Unix epoch.
func (s *NonceSource) counter(now time.Time) uint64 {
	ns := now.UnixNano()
	if ns < 0 {
		return 0
	}
	return uint64(ns / int64(s.period))
}

// make writes counter c and its MAC into buf (nonceBytes long).
func (s *NonceSource) make(buf []byte, c uint64) {
	binary.BigEndian.PutUint64(buf[:8], c)
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("dpop-nonce\x00"))
	m.Write(buf[:8])
	var sum [sha256.Size]byte
	copy(buf[8:], m.Sum(sum[:0])[:nonceMACBytes])
}
