package accesstoken

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Supported signature algorithms. Ed25519 (EdDSA) is the default: fast to
// sign and verify with small keys and signatures; ES256 is offered for
// verifiers that lack EdDSA.
const (
	AlgEdDSA = "EdDSA"
	AlgES256 = "ES256"
)

// KeySet is a JWK set (RFC 7517 section 5) of private signing keys. The first
// key signs; every key is published, so a retired key keeps verifying the
// tokens it signed until they expire, and a new key can be published before
// it signs.
type KeySet struct {
	private jwk.Set
	public  jwk.Set
	signer  signingKey
}

// signingKey is the active key in its raw form: jwx rebuilds an Ed25519 key
// from its seed on every signature when given a jwk.Key, so the raw key is
// kept once.
type signingKey struct {
	kid string
	alg jwa.SignatureAlgorithm
	key any
}

// GenerateKey makes a new private JWK for alg with "kid" (its RFC 7638
// thumbprint), "alg" and "use" set.
func GenerateKey(alg string) (jwk.Key, error) {
	var raw any
	switch alg {
	case AlgEdDSA, "":
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate ed25519 key: %w", err)
		}
		raw, alg = priv, AlgEdDSA
	case AlgES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate P-256 key: %w", err)
		}
		raw = priv
	default:
		return nil, fmt.Errorf("unsupported algorithm %q (use %s or %s)", alg, AlgEdDSA, AlgES256)
	}
	key, err := jwk.Import(raw)
	if err != nil {
		return nil, fmt.Errorf("import key: %w", err)
	}
	if err := jwk.AssignKeyID(key); err != nil {
		return nil, fmt.Errorf("assign kid: %w", err)
	}
	sigAlg, _ := jwa.LookupSignatureAlgorithm(alg)
	if err := key.Set(jwk.AlgorithmKey, sigAlg); err != nil {
		return nil, fmt.Errorf("set alg: %w", err)
	}
	if err := key.Set(jwk.KeyUsageKey, jwk.ForSignature); err != nil {
		return nil, fmt.Errorf("set use: %w", err)
	}
	return key, nil
}

// NewKeySet builds a KeySet from private keys, the first of which signs.
func NewKeySet(keys ...jwk.Key) (*KeySet, error) {
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k); err != nil {
			return nil, fmt.Errorf("add key: %w", err)
		}
	}
	return keySetFrom(set)
}

// ParseKeySet reads a JWK set document holding private keys.
func ParseKeySet(data []byte) (*KeySet, error) {
	set, err := jwk.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("parse JWK set: %w", err)
	}
	return keySetFrom(set)
}

// LoadKeySet reads the JWK set file at path.
func LoadKeySet(path string) (*KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key set: %w", err)
	}
	ks, err := ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

func keySetFrom(set jwk.Set) (*KeySet, error) {
	if set.Len() == 0 {
		return nil, errors.New("key set holds no key")
	}
	seen := map[string]bool{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid, ok := k.KeyID()
		if !ok || kid == "" {
			return nil, fmt.Errorf("key %d has no kid", i)
		}
		if seen[kid] {
			return nil, fmt.Errorf("kid %q appears twice", kid)
		}
		seen[kid] = true
		if _, err := keyAlgorithm(k); err != nil {
			return nil, fmt.Errorf("key %q: %w", kid, err)
		}
		if isPriv, err := jwk.IsPrivateKey(k); err != nil || !isPriv {
			return nil, fmt.Errorf("key %q is not a private key", kid)
		}
	}
	first, _ := set.Key(0)
	alg, _ := keyAlgorithm(first)
	kid, _ := first.KeyID()
	var raw any
	switch alg.String() {
	case AlgEdDSA:
		var k ed25519.PrivateKey
		if err := jwk.Export(first, &k); err != nil {
			return nil, fmt.Errorf("export signing key: %w", err)
		}
		raw = k
	default:
		var k ecdsa.PrivateKey
		if err := jwk.Export(first, &k); err != nil {
			return nil, fmt.Errorf("export signing key: %w", err)
		}
		raw = &k
	}
	public, err := jwk.PublicSetOf(set)
	if err != nil {
		return nil, fmt.Errorf("public key set: %w", err)
	}
	return &KeySet{private: set, public: public, signer: signingKey{kid: kid, alg: alg, key: raw}}, nil
}

// keyAlgorithm returns the key's signature algorithm, which must be stated
// ("alg", RFC 7517 section 4.4) and be one this service signs with.
func keyAlgorithm(k jwk.Key) (jwa.SignatureAlgorithm, error) {
	a, ok := k.Algorithm()
	if !ok {
		return jwa.SignatureAlgorithm{}, errors.New(`no "alg"`)
	}
	switch a.String() {
	case AlgEdDSA:
		if k.KeyType() != jwa.OKP() {
			return jwa.SignatureAlgorithm{}, errors.New("EdDSA needs an OKP key")
		}
		return jwa.EdDSA(), nil
	case AlgES256:
		if k.KeyType() != jwa.EC() {
			return jwa.SignatureAlgorithm{}, errors.New("ES256 needs an EC key")
		}
		return jwa.ES256(), nil
	}
	return jwa.SignatureAlgorithm{}, fmt.Errorf("unsupported alg %q", a.String())
}

// Public returns the public keys, as published at the JWKS endpoint.
func (ks *KeySet) Public() jwk.Set { return ks.public }

// SigningKeyID is the kid of the key that signs new tokens.
func (ks *KeySet) SigningKeyID() string { return ks.signer.kid }

// PublicJSON is the JWKS document (RFC 7517 section 5) of the public keys.
func (ks *KeySet) PublicJSON() ([]byte, error) {
	return json.Marshal(ks.public)
}

// MarshalPrivate is the key file's content, private keys included.
func (ks *KeySet) MarshalPrivate() ([]byte, error) {
	return json.MarshalIndent(ks.private, "", "  ")
}

// Rotated returns a new KeySet whose first (signing) key is newKey, keeping
// at most keep earlier keys for verification.
func (ks *KeySet) Rotated(newKey jwk.Key, keep int) (*KeySet, error) {
	keys := []jwk.Key{newKey}
	for i := 0; i < ks.private.Len() && i < keep; i++ {
		k, _ := ks.private.Key(i)
		keys = append(keys, k)
	}
	return NewKeySet(keys...)
}

// Staged returns a new KeySet that publishes newKey after the current keys
// without signing with it: verifiers learn the key before the first token
// signed by it exists. Promoted then makes it the signing key.
func (ks *KeySet) Staged(newKey jwk.Key) (*KeySet, error) {
	keys := make([]jwk.Key, 0, ks.private.Len()+1)
	for i := range ks.private.Len() {
		k, _ := ks.private.Key(i)
		keys = append(keys, k)
	}
	return NewKeySet(append(keys, newKey)...)
}

// Promoted returns a new KeySet whose signing key is the published key kid,
// the others kept in order for verification.
func (ks *KeySet) Promoted(kid string) (*KeySet, error) {
	first, ok := ks.private.LookupKeyID(kid)
	if !ok {
		return nil, fmt.Errorf("no key with kid %q in the set", kid)
	}
	keys := []jwk.Key{first}
	for i := range ks.private.Len() {
		k, _ := ks.private.Key(i)
		if id, _ := k.KeyID(); id != kid {
			keys = append(keys, k)
		}
	}
	return NewKeySet(keys...)
}

// Without returns a new KeySet without the key kid, which must not be the
// signing key: a set always has the key it signs with, and removing it
// would silently make the next one sign. Which keys an operator may
// withdraw is the operator tooling's rule, not the set's.
func (ks *KeySet) Without(kid string) (*KeySet, error) {
	if _, ok := ks.private.LookupKeyID(kid); !ok {
		return nil, fmt.Errorf("no key with kid %q in the set", kid)
	}
	if kid == ks.SigningKeyID() {
		return nil, fmt.Errorf("key %s is the set's signing key: a set keeps its signing key (Promoted makes another one sign)", kid)
	}
	var keys []jwk.Key
	for i := range ks.private.Len() {
		k, _ := ks.private.Key(i)
		if id, _ := k.KeyID(); id != kid {
			keys = append(keys, k)
		}
	}
	return NewKeySet(keys...)
}

// KeyIDs lists the kids of the set, the signing key first.
func (ks *KeySet) KeyIDs() []string {
	ids := make([]string, 0, ks.private.Len())
	for i := range ks.private.Len() {
		k, _ := ks.private.Key(i)
		id, _ := k.KeyID()
		ids = append(ids, id)
	}
	return ids
}

// WriteFile writes the private key set to path with mode 0600, atomically
// (a temporary file renamed over the target), so a crash never leaves a
// half-written key file.
func (ks *KeySet) WriteFile(path string) error {
	data, err := ks.MarshalPrivate()
	if err != nil {
		return fmt.Errorf("encode key set: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".jwks-*")
	if err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write key set: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write key set: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write key set: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	return nil
}
