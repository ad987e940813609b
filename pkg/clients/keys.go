package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/keysize"
)

// AssertionAlgorithms are the JWS algorithms a client assertion may be
// signed with (private_key_jwt; RFC 7518 section 3.1, RFC 8037 for EdDSA,
// and Ed25519, its fully specified name of RFC 9864 section 2.2, which
// oauth4webapi 3 signs Ed25519 keys with): never "none", never a MAC
// (HS*), whose key would be a shared secret.
var AssertionAlgorithms = []string{"ES256", "ES384", "RS256", "RS384", "PS256", "EdDSA", "Ed25519"}

// Limits of a client's public keys.
const (
	MaxClientKeys = 10
	MaxJWKSBytes  = 64 << 10
	// MinRSAKeyBits and MaxRSAKeyBits bound an RSA key's modulus
	// (package keysize, the one rule for every key a signature is
	// verified with).
	MinRSAKeyBits     = keysize.MinRSABits
	MaxRSAKeyBits     = keysize.MaxRSABits
	maxJWKSURILength  = 2048
	keysBlobURIMember = "jwks_uri"
)

// ClientKeySource is where a private_key_jwt client's public keys come
// from: a JWK set registered with the client (JWKS), or a URL the token
// service fetches them from (URL, its "jwks_uri", RFC 7591 section 2).
type ClientKeySource struct {
	// JWKS is a JWK set (RFC 7517 section 5) of public signing keys: EC
	// P-256 or P-384, RSA of 2048 to 4096 bits, or Ed25519; each with a
	// "kid", unique in the set; "use", if given, "sig"; "alg", if given,
	// one of AssertionAlgorithms and fit for the key.
	JWKS []byte
	// URL is an https URL serving such a set (http only with AllowHTTP).
	URL string
	// AllowHTTP accepts an http URL: the operator's choice, for a partner
	// inside the operator's own network (deploy/docs/configuration.md:
	// JWKS_URL_ALLOW_HTTP).
	AllowHTTP bool
}

// Validate reports what is wrong with the source, an ErrInvalid refusal
// (Error): exactly one of JWKS and URL, and what CheckKeySet or the URL
// rules say.
func (k ClientKeySource) Validate() error {
	switch {
	case len(k.JWKS) > 0 && k.URL != "":
		return Invalidf("keys: give a JWK set or a jwks_uri, not both")
	case k.URL != "":
		return CheckJWKSURI(k.URL, k.AllowHTTP)
	case len(k.JWKS) == 0:
		return Invalidf("keys: a private_key_jwt client needs a JWK set or a jwks_uri")
	}
	_, err := CheckKeySet(k.JWKS)
	return err
}

// problem is what Validate says of k, "" when nothing is wrong: one
// problem of a ClientSpec among others.
func (k ClientKeySource) problem() string {
	var refusal *Error
	if errors.As(k.Validate(), &refusal) {
		return refusal.Detail
	}
	return ""
}

// CheckJWKSURI checks a jwks_uri: an absolute https URL (http with
// allowHTTP) without credentials or fragment, its port (if any) 1-65535
// (RFC 3986 section 3.2.3 allows any digits; TCP has no port 0 to connect
// to, nor one past 65535), at most 2048 bytes. What is
// wrong is an ErrInvalid refusal (Error).
func CheckJWKSURI(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || len(raw) > maxJWKSURILength:
		return Invalidf("jwks_uri %q: not an absolute URL of at most %d bytes", raw, maxJWKSURILength)
	case u.User != nil || u.Fragment != "":
		return Invalidf("jwks_uri %q: no credentials or fragment allowed", raw)
	case !validPort(u.Port()):
		return Invalidf("jwks_uri %q: the port must be 1-65535", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowHTTP:
		return nil
	case u.Scheme == "http":
		return Invalidf("jwks_uri %q: must be https (the operator may allow http: JWKS_URL_ALLOW_HTTP=true)", raw)
	}
	return Invalidf("jwks_uri %q: must be https", raw)
}

// CheckKeySet parses a JWK set of public signing keys and reports every
// problem of it at once (see ClientKeySource.JWKS), an ErrInvalid refusal
// (Error). A private key is refused: the service must never hold a
// partner's private key.
func CheckKeySet(data []byte) (jwk.Set, error) {
	if len(data) > MaxJWKSBytes {
		return nil, Invalidf("keys: a JWK set of %d bytes: at most %d", len(data), MaxJWKSBytes)
	}
	set, err := jwk.Parse(data)
	if err != nil {
		// The parser's words stay in the log: they are not this API's.
		refusal := Invalidf("keys: not a JWK set")
		refusal.Cause = err
		return nil, refusal
	}
	if err := CheckKeys(set); err != nil {
		return nil, err
	}
	return set, nil
}

// CheckKeys reports every problem of a parsed JWK set of public signing
// keys (see ClientKeySource.JWKS), an ErrInvalid refusal (Error): what
// CheckKeySet checks once parsed, and what the token service checks of a
// set fetched from a jwks_uri.
func CheckKeys(set jwk.Set) error {
	if set.Len() == 0 || set.Len() > MaxClientKeys {
		return Invalidf("keys: %d keys: give 1 to %d", set.Len(), MaxClientKeys)
	}
	var problems []string
	seen := map[string]bool{}
	for i := range set.Len() {
		key, _ := set.Key(i)
		kid, ok := key.KeyID()
		name := "key " + strconv.Itoa(i+1)
		switch {
		case !ok || kid == "":
			problems = append(problems, fmt.Sprintf("%s: a \"kid\" is required", name))
		case seen[kid]:
			problems = append(problems, fmt.Sprintf("%s: \"kid\" %q is repeated", name, kid))
		default:
			name = fmt.Sprintf("key %q", kid)
		}
		seen[kid] = true
		if priv, err := jwk.IsPrivateKey(key); err != nil || priv {
			problems = append(problems, fmt.Sprintf("%s: only public keys (a private or symmetric key must never leave its owner)", name))
			continue
		}
		if use, ok := key.KeyUsage(); ok && use != "sig" {
			problems = append(problems, fmt.Sprintf("%s: \"use\" %q: must be \"sig\"", name, use))
		}
		fits := KeyAlgorithms(key)
		if len(fits) == 0 {
			problems = append(problems, fmt.Sprintf("%s: unsupported key (EC P-256 or P-384, RSA of %d to %d bits, or Ed25519)", name, MinRSAKeyBits, MaxRSAKeyBits))
			continue
		}
		if alg, ok := key.Algorithm(); ok && !slices.Contains(fits, alg.String()) {
			problems = append(problems, fmt.Sprintf("%s: \"alg\" %q: must be one of %v for this key", name, alg.String(), fits))
		}
	}
	return Invalid(problems...)
}

// KeyAlgorithms lists the AssertionAlgorithms that key can verify (none
// for a key this service does not accept: an RSA key outside
// keysize's bounds among them, whether registered, served by a jwks_uri
// or stored before the bounds).
func KeyAlgorithms(key jwk.Key) []string {
	switch k := key.(type) {
	case jwk.ECDSAPublicKey:
		switch crv, _ := k.Crv(); crv {
		case jwa.P256():
			return []string{"ES256"}
		case jwa.P384():
			return []string{"ES384"}
		}
	case jwk.RSAPublicKey:
		if n, ok := k.N(); ok && keysize.RSA(n) {
			return []string{"RS256", "RS384", "PS256"}
		}
	case jwk.OKPPublicKey:
		if crv, _ := k.Crv(); crv == jwa.Ed25519() {
			return []string{"EdDSA", "Ed25519"}
		}
	}
	return nil
}

// blob is what Redis keeps of the source (keysKey): the JWK set as given,
// or {"jwks_uri": URL}.
func (k ClientKeySource) blob() ([]byte, error) {
	if k.URL != "" {
		return json.Marshal(map[string]string{keysBlobURIMember: k.URL})
	}
	return k.JWKS, nil
}

// ClientKeys is what the token service needs to verify a client's
// assertions: its keys (a set, or where to fetch them) and their version,
// which Authenticate compares with the client's in its round trip.
type ClientKeys struct {
	// Keyed reports a private_key_jwt client; the rest is empty otherwise
	// (an unknown client, a secret client) but for a mutual-TLS client's
	// (RFC 8705 section 2), whose Method says which it is.
	Keyed bool
	// Method is the client's authentication method for a client without
	// a secret (AuthPrivateKeyJWT, AuthTLSClient, AuthSelfSignedTLSClient),
	// "" otherwise.
	Method  string
	Version string
	// Set or URL: the keys of a private_key_jwt or a
	// self_signed_tls_client_auth client.
	Set jwk.Set
	URL string
	// TLSSubject: the registered name of a tls_client_auth client.
	TLSSubject *TLSSubject
}

// ClientKeys reads a client's public keys and their version in one round
// trip (a pipeline of two reads on the client's slot).
func (s *Store) ClientKeys(ctx context.Context, id string) (ClientKeys, error) {
	if !ValidClientID(id) {
		return ClientKeys{}, nil
	}
	var rec *redis.SliceCmd
	var blob *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.HMGet(ctx, s.clientKey(id), "auth_method", "keys_version")
		blob = p.Get(ctx, s.keysKey(id))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return ClientKeys{}, unavailable("read client keys", err)
	}
	v := rec.Val()
	if len(v) != 2 {
		return ClientKeys{}, nil
	}
	out := ClientKeys{Method: str(v[0]), Keyed: str(v[0]) == AuthPrivateKeyJWT, Version: str(v[1])}
	raw := []byte(blob.Val())
	switch out.Method {
	case AuthPrivateKeyJWT, AuthSelfSignedTLSClient:
	case AuthTLSClient:
		sub, ok := subjectFrom(raw)
		if !ok {
			return ClientKeys{}, fmt.Errorf("client %s: stored tls subject: not one", id)
		}
		out.TLSSubject = &sub
		return out, nil
	default:
		return ClientKeys{}, nil
	}
	var uri map[string]string
	if json.Unmarshal(raw, &uri) == nil && uri[keysBlobURIMember] != "" {
		out.URL = uri[keysBlobURIMember]
		return out, nil
	}
	if out.Set, err = jwk.Parse(raw); err != nil {
		return ClientKeys{}, fmt.Errorf("client %s: stored keys: %w", id, err)
	}
	return out, nil
}

// validPort reports whether a URL's port is absent ("": the scheme's) or a
// TCP port one may connect to, 1-65535, in decimal digits.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n >= 1
}
