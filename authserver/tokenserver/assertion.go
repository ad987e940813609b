package tokenserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// AssertionType is the client_assertion_type of a JWT client assertion
// (RFC 7523 section 2.2).
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Limits of a client assertion (RFC 7523 section 3).
const (
	// DefaultMaxAssertionLifetime is the default of
	// Config.MaxAssertionLifetime: an hour, what Authlib signs
	// (exp = iat + 3600), so that Authlib, oauth4webapi (exp = iat + 60)
	// and this project's SDK (60 s) are accepted unchanged.
	DefaultMaxAssertionLifetime = time.Hour
	// MaxAssertionLifetimeLimit bounds what an operator may set.
	MaxAssertionLifetimeLimit = 24 * time.Hour
	// AssertionLeeway is the clock skew tolerated on exp, nbf and iat.
	AssertionLeeway   = 30 * time.Second
	maxAssertionBytes = 8 << 10
	maxJTILength      = 256
)

// assertionClaims are the claims of a client assertion this service reads
// (RFC 7523 section 3). They are decoded by hand from the verified payload
// rather than through jwt.Parse's validators: "aud" may be any of several
// values and "exp" has an upper bound, neither of which those express, and
// every claim is checked below in one place.
type assertionClaims struct {
	Iss string          `json:"iss"`
	Sub string          `json:"sub"`
	Aud json.RawMessage `json:"aud"`
	Exp *float64        `json:"exp"`
	Nbf *float64        `json:"nbf"`
	Iat *float64        `json:"iat"`
	Jti string          `json:"jti"`
}

// assertionRefused is an assertion that did not verify, and why: for the
// access record only (assertion_refused), never shown: the client gets
// invalid_client, as for a wrong secret.
type assertionRefused struct {
	why string
	// unknownKid: no key of the client has the assertion's "kid", or, with
	// none, fits its "alg" (errUnknownKid): the keys may be refetched.
	unknownKid bool
}

func (e *assertionRefused) Error() string { return "client assertion refused: " + e.why }

// Is makes errors.Is(err, errUnknownKid) hold for every refusal of an
// unknown kid.
func (e *assertionRefused) Is(target error) bool { return target == errUnknownKid && e.unknownKid }

// refused is a refusal of the assertion for why (the caller's input and
// fixed words only).
func refused(format string, args ...any) error {
	return &assertionRefused{why: fmt.Sprintf(format, args...)}
}

// errUnknownKid: no key of the client has the assertion's "kid".
var errUnknownKid error = &assertionRefused{why: "unknown kid", unknownKid: true}

// assertionSubject reads the client id of an assertion before it is
// verified: its "sub" (RFC 7523 section 3: iss and sub are the client id).
// Which keys verify it depends on that id; a forged one just fails.
func assertionSubject(raw string) (string, bool) {
	if len(raw) > maxAssertionBytes {
		return "", false
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &c) != nil || !clients.ValidClientID(c.Sub) {
		return "", false
	}
	return c.Sub, true
}

// verifyAssertion checks a client assertion of client id against its keys
// (RFC 7523 section 3, RFC 7521 section 4.2, as draft-ietf-oauth-rfc7523bis
// tightens them): a compact JWS with one of clients.AssertionAlgorithms
// (never "none" or a MAC) fit for the key its "kid" names, or, without a
// "kid" (optional, RFC 7515 section 4.1.4), for the one key of the client
// that fits its "alg"; a "typ", if any, not that of another kind of JWT
// this service meets (foreignTyp); iss = sub = id; "aud" one of audiences,
// alone (audienceHolds); "exp" required, not passed and at most
// maxLifetime ahead; "nbf" and "iat", when present, not in the future;
// "jti" required. It returns the jti and exp for the single-use check.
func verifyAssertion(raw, id string, set jwk.Set, audiences []string, now time.Time, maxLifetime time.Duration) (string, time.Time, error) {
	if set == nil || len(raw) > maxAssertionBytes {
		return "", time.Time{}, refused("no keys, or longer than %d bytes", maxAssertionBytes)
	}
	msg, err := jws.Parse([]byte(raw), jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 {
		return "", time.Time{}, refused("not a compact JWS")
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	alg, _ := h.Algorithm()
	kid, _ := h.KeyID()
	name := alg.String()
	if !slices.Contains(clients.AssertionAlgorithms, name) {
		return "", time.Time{}, refused("alg %q", alg.String())
	}
	if _, crit := h.Critical(); crit {
		return "", time.Time{}, refused("crit")
	}
	if typ, _ := h.Type(); foreignTyp(typ) {
		return "", time.Time{}, refused("typ %q", typ)
	}
	var key jwk.Key
	if kid != "" {
		k, ok := set.LookupKeyID(kid)
		if !ok {
			return "", time.Time{}, errUnknownKid
		}
		if !keyFits(k, name) {
			return "", time.Time{}, refused("alg %q does not fit key %q", alg.String(), kid)
		}
		key = k
	} else {
		var fits []jwk.Key
		for i := range set.Len() {
			if k, _ := set.Key(i); keyFits(k, name) {
				fits = append(fits, k)
			}
		}
		switch len(fits) {
		case 0:
			return "", time.Time{}, &assertionRefused{why: fmt.Sprintf("unknown kid (no kid, and no key fits alg %q)", name), unknownKid: true}
		case 1:
			key = fits[0]
		default:
			return "", time.Time{}, refused("no kid, and %d keys fit alg %q: name one", len(fits), name)
		}
	}
	sa, _ := jwa.LookupSignatureAlgorithm(alg.String())
	payload, err := jws.Verify([]byte(raw), jws.WithKey(sa, key))
	if err != nil {
		return "", time.Time{}, refused("signature")
	}
	var c assertionClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", time.Time{}, refused("claims")
	}
	at := func(v *float64) time.Time { return time.Unix(int64(*v), 0) }
	switch {
	case c.Iss != id || c.Sub != id:
		return "", time.Time{}, refused("iss and sub must be the client id")
	case !audienceHolds(c.Aud, audiences):
		return "", time.Time{}, refused("aud")
	case c.Exp == nil:
		return "", time.Time{}, refused("exp required")
	case !at(c.Exp).After(now.Add(-AssertionLeeway)):
		return "", time.Time{}, refused("expired")
	case at(c.Exp).After(now.Add(maxLifetime + AssertionLeeway)):
		return "", time.Time{}, refused("exp more than %v ahead", maxLifetime)
	case c.Nbf != nil && at(c.Nbf).After(now.Add(AssertionLeeway)):
		return "", time.Time{}, refused("not yet valid")
	case c.Iat != nil && at(c.Iat).After(now.Add(AssertionLeeway)):
		return "", time.Time{}, refused("issued in the future")
	case c.Jti == "" || len(c.Jti) > maxJTILength:
		return "", time.Time{}, refused("jti required (at most %d bytes)", maxJTILength)
	}
	return c.Jti, at(c.Exp), nil
}

// keyFits reports whether key may verify a signature of alg name: the
// key's type fits it (clients.KeyAlgorithms, which also bounds its size:
// package keysize) and so does its "alg", if set. EdDSA and Ed25519 name
// one algorithm for an Ed25519 key (RFC 9864 section 2.2 deprecates the
// first for the second): a key registered with either verifies a
// signature made under either.
func keyFits(key jwk.Key, name string) bool {
	if !slices.Contains(clients.KeyAlgorithms(key), name) {
		return false
	}
	ka, set := key.Algorithm()
	return !set || ka.String() == name || (edDSA(ka.String()) && edDSA(name))
}

// edDSA reports whether alg is one of the two names of EdDSA with
// Ed25519 (RFC 8037 section 3.1, RFC 9864 section 2.2).
func edDSA(alg string) bool { return alg == "EdDSA" || alg == "Ed25519" }

// foreignTyp reports whether typ is the JOSE "typ" of another kind of JWT
// this service issues or reads: an access token (RFC 9068 section 2.1,
// "at+jwt") or a DPoP proof (RFC 9449 section 4.2, "dpop+jwt"), with or
// without the "application/" prefix, in any case (RFC 7515 section
// 4.1.9). draft-ietf-oauth-rfc7523bis asks that a client assertion never
// be accepted as any other kind of JWT; refusing those kinds keeps a
// token or a proof of the client from being replayed as its assertion.
// No "typ", "JWT" and the draft's "client-authentication+jwt" are
// accepted.
func foreignTyp(typ string) bool {
	t := strings.TrimPrefix(strings.ToLower(typ), "application/")
	return t == "at+jwt" || t == "dpop+jwt"
}

// audienceHolds reports whether "aud" (a string or an array of strings,
// RFC 7519 section 4.1.3) names one of want and nothing else: a string,
// or an array of exactly one member (draft-ietf-oauth-rfc7523bis: the
// audience is this server's issuer identifier, a single value; an array
// that also names another audience is an assertion meant for others too,
// refused).
func audienceHolds(raw json.RawMessage, want []string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return slices.Contains(want, one)
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil || len(many) != 1 {
		return false
	}
	return slices.Contains(want, many[0])
}

// checkAssertion verifies a client assertion against the client's keys
// (cached; fetched again for an unknown kid of a jwks_uri client) and says
// what Authenticate needs of it. When a jwks_uri client's keys could not be
// fetched it returns errKeysUnavailable: the assertion was not checked, and
// nothing is counted against the client or the address.
func (s *Server) checkAssertion(ctx context.Context, creds credentials, reload bool) (*clients.AssertionCheck, error) {
	check := &clients.AssertionCheck{Raw: creds.Assertion}
	want := keysCached
	if reload {
		want = keysReload
	}
	e, err := s.assertionKeys.get(ctx, creds.ID, want)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	verify := func(e *keysEntry) (string, time.Time, error) {
		if e.unavailable() {
			return "", time.Time{}, errKeysUnavailable
		}
		return verifyAssertion(creds.Assertion, creds.ID, e.keys.Set, s.audiences, now, s.cfg.MaxAssertionLifetime)
	}
	jti, exp, verr := verify(e)
	if errors.Is(verr, errUnknownKid) && e.keys.URL != "" {
		fresh, err := s.assertionKeys.get(ctx, creds.ID, keysRefetch)
		if err != nil {
			return nil, err
		}
		if fresh != e { // fetched again (or by another request meanwhile)
			e = fresh
			jti, exp, verr = verify(e)
		}
		if errors.Is(verr, errUnknownKid) && e.failed {
			verr = errKeysUnavailable
		}
	}
	if verr == errKeysUnavailable {
		httpserver.Annotate(ctx, slog.Bool("jwks_uri_unavailable", true))
		return nil, verr
	}
	check.KeysVersion = e.keys.Version
	if verr != nil {
		var r *assertionRefused
		if errors.As(verr, &r) { // verifyAssertion returns nothing else
			httpserver.Annotate(ctx, slog.String("assertion_refused", r.why))
		}
		return check, nil
	}
	// The jti must be remembered as long as the assertion can be accepted:
	// until exp plus the leeway (clients.AssertionCheck.Expires).
	check.Verified, check.JTI, check.Expires = true, jti, exp.Add(AssertionLeeway)
	return check, nil
}
