package clients

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"regexp"
)

// Credential formats (spec: Client).
const (
	ClientIDPrefix = "svc_"
	SecretPrefix   = "svc_cs_"
)

var (
	idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	clientIDRE = regexp.MustCompile(`^svc_[a-z2-7]{24}$`)
)

// NewClientID returns "svc_" and 24 base32 characters (120 random bits).
func NewClientID() string {
	var b [15]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return ClientIDPrefix + idEncoding.EncodeToString(b[:])
}

// NewSecret returns "svc_cs_" and 43 base64url characters (256 random bits).
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidClientID reports whether id has the form of a client id.
func ValidClientID(id string) bool { return clientIDRE.MatchString(id) }

// Digest is the stored form of a secret: its SHA-256.
type Digest [sha256.Size]byte

// DigestOf hashes a secret.
func DigestOf(secret string) Digest { return sha256.Sum256([]byte(secret)) }

// Matches hashes the presented secret and compares it with d in constant
// time. It costs the same whether or not d belongs to a real client, so the
// token endpoint runs it for unknown and revoked clients too.
func (d Digest) Matches(secret string) bool {
	got := DigestOf(secret)
	return subtle.ConstantTimeCompare(got[:], d[:]) == 1
}

// unknownDigest is compared against when there is no client: no secret
// hashes to it (it is not the digest of any string anyone knows).
var unknownDigest = func() Digest {
	var d Digest
	_, _ = rand.Read(d[:])
	return d
}()
