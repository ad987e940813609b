package clients

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"hash/crc32"
	"regexp"
)

// Credential formats (resourceserver/apidocs/guides/authentication.md,
// Client credentials).
const (
	ClientIDPrefix = "svc_"
	SecretPrefix   = "svc_cs_"
)

// idAlphabet is the alphabet of client ids (lower-case RFC 4648 base32).
const idAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// clientIDLen is the number of base32 characters after ClientIDPrefix.
const clientIDLen = 24

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// NewClientID returns "svc_" and 24 base32 characters (120 random bits).
func NewClientID() string {
	var b [15]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return ClientIDPrefix + idEncoding.EncodeToString(b[:])
}

// Client secret format (published in the authentication guide and
// deploy/docs/operator-guide.md):
//
//	svc_cs_ + 37 random base62 characters + 6 base62 characters of checksum
//
// The checksum is the CRC-32 (IEEE 802.3 polynomial, as hash/crc32's
// ChecksumIEEE, zlib's crc32 and Python's zlib.crc32) of the 37 random
// characters, written as a 6-digit base62 number, most significant digit
// first, zero-padded, in the alphabet 0-9, A-Z, a-z. A secret scanner finds
// candidates with SecretPattern and confirms them offline with the checksum,
// so a string that merely looks like a secret is not reported: a random
// 43-character string passes with a chance of 1 in 2^32. This is GitHub's
// token format idea applied to client secrets.
const (
	// SecretPattern matches a client secret inside text (no anchors); a
	// match is a secret only if its checksum holds (ValidSecret).
	SecretPattern = `svc_cs_[0-9A-Za-z]{43}`
	// SecretRandomLen is the number of random characters of a secret.
	SecretRandomLen = 37
	// SecretChecksumLen is the number of checksum characters that end it.
	SecretChecksumLen = 6
	// SecretLen is the whole length of a secret, prefix included.
	SecretLen = len(SecretPrefix) + SecretRandomLen + SecretChecksumLen
)

// base62 is the alphabet of secrets and of their checksum, in digit order.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Membership tables of the two alphabets, for formed.
var idChars, base62Chars = charTable(idAlphabet), charTable(base62)

func charTable(alphabet string) (t [256]bool) {
	for i := range len(alphabet) {
		t[alphabet[i]] = true
	}
	return t
}

// formed reports whether s is prefix followed by exactly n characters of
// the alphabet in table: what `^svc_[a-z2-7]{24}$` and `^`+SecretPattern+`$`
// say (TestFormedMatchesPatterns), checked byte by byte because both run
// on every token and introspection request, where the regexp engine took
// 2% of a token request's CPU (its CPU profile under load: go run
// ./deploy/bench --scenarios token --profiles DIR).
func formed(s, prefix string, n int, table *[256]bool) bool {
	if len(s) != len(prefix)+n || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if !table[s[i]] {
			return false
		}
	}
	return true
}

// NewSecret returns a new client secret: "svc_cs_", 37 random base62
// characters (220 random bits, from crypto/rand, each character uniform)
// and their 6-character checksum (see SecretPattern).
func NewSecret() string {
	out := make([]byte, 0, SecretLen)
	out = append(out, SecretPrefix...)
	var buf [64]byte
	for len(out) < len(SecretPrefix)+SecretRandomLen {
		_, _ = rand.Read(buf[:]) // crypto/rand.Read never fails (Go 1.24+).
		for _, b := range buf {
			// Rejection sampling: 248 = 4*62, so b%62 is uniform below it.
			if b < 248 && len(out) < len(SecretPrefix)+SecretRandomLen {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(append(out, secretChecksum(string(out[len(SecretPrefix):]))...))
}

// secretChecksum is the checksum characters of the random part of a secret.
func secretChecksum(random string) string {
	var d [SecretChecksumLen]byte
	n := crc32.ChecksumIEEE([]byte(random))
	for i := SecretChecksumLen - 1; i >= 0; i-- {
		d[i] = base62[n%62]
		n /= 62
	}
	return string(d[:])
}

// ValidSecret reports whether s has the form of a client secret and its
// checksum holds. It looks at s only (a pattern match and a CRC-32 of 37
// bytes, no I/O), and is what the token endpoint checks before it looks a
// client up. Secrets issued before checksums were introduced fail it (see
// LegacySecret).
func ValidSecret(s string) bool {
	if !formed(s, SecretPrefix, SecretRandomLen+SecretChecksumLen, &base62Chars) {
		return false
	}
	body := s[len(SecretPrefix):]
	return secretChecksum(body[:SecretRandomLen]) == body[SecretRandomLen:]
}

var legacySecretRE = regexp.MustCompile(`^svc_cs_[A-Za-z0-9_-]{43}$`)

// LegacySecret reports whether s has the form of a secret issued before
// checksums ("svc_cs_" and 43 base64url characters, 256 random bits): the
// token service accepts those only while its operator allows it, until every
// such client's secret has been rotated. Every checksummed secret has this
// form too; callers check ValidSecret first.
func LegacySecret(s string) bool { return legacySecretRE.MatchString(s) }

// ValidClientID reports whether id has the form of a client id.
func ValidClientID(id string) bool { return formed(id, ClientIDPrefix, clientIDLen, &idChars) }

// Digest is the stored form of a secret: its SHA-256.
type Digest [sha256.Size]byte

// DigestOf hashes a secret.
func DigestOf(secret string) Digest { return sha256.Sum256([]byte(secret)) }
