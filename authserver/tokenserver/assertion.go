package tokenserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"golang.org/x/sync/singleflight"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// AssertionType is the client_assertion_type of a JWT client assertion
// (RFC 7523 section 2.2).
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Limits of a client assertion (RFC 7523 section 3).
const (
	// MaxAssertionLifetime bounds how far ahead an assertion's "exp" may
	// be: an assertion is a one-time credential, and its jti is remembered
	// until it expires. (Authlib signs exp = iat + 3600 unless given an exp
	// claim: the authentication guide says how.)
	MaxAssertionLifetime = 5 * time.Minute
	// AssertionLeeway is the clock skew tolerated on exp, nbf and iat.
	AssertionLeeway   = 30 * time.Second
	maxAssertionBytes = 8 << 10
	maxJTILength      = 256
)

// JWKS fetching of clients registered with a jwks_uri.
const (
	jwksFetchTimeout = 3 * time.Second
	// jwksTTL is how long fetched keys are used before they are fetched
	// again; an assertion with a kid the keys lack fetches them at once,
	// at most once per jwksRefetchEvery per client.
	jwksTTL          = 5 * time.Minute
	jwksRefetchEvery = 10 * time.Second
	jwksMaxRedirects = 3
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

// errBadAssertion: the assertion did not verify. It is never shown: the
// client gets invalid_client, as for a wrong secret.
var errBadAssertion = errors.New("client assertion refused")

// errUnknownKid: no key of the client has the assertion's "kid".
var errUnknownKid = fmt.Errorf("%w: unknown kid", errBadAssertion)

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
// (RFC 7523 section 3, RFC 7521 section 4.2): a compact JWS with one of
// clients.AssertionAlgorithms (never "none" or a MAC) fit for the key its
// "kid" names; iss = sub = id; "aud" holding one of audiences; "exp"
// required, not passed and at most MaxAssertionLifetime ahead; "nbf" and
// "iat", when present, not in the future; "jti" required. It returns the
// jti and exp for the single-use check.
func verifyAssertion(raw, id string, set jwk.Set, audiences []string, now time.Time) (string, time.Time, error) {
	if set == nil || len(raw) > maxAssertionBytes {
		return "", time.Time{}, errBadAssertion
	}
	msg, err := jws.Parse([]byte(raw), jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 {
		return "", time.Time{}, fmt.Errorf("%w: not a compact JWS", errBadAssertion)
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	alg, _ := h.Algorithm()
	kid, _ := h.KeyID()
	name := alg.String()
	if !slices.Contains(clients.AssertionAlgorithms, name) {
		return "", time.Time{}, fmt.Errorf("%w: alg %q", errBadAssertion, alg.String())
	}
	if _, crit := h.Critical(); crit {
		return "", time.Time{}, fmt.Errorf("%w: crit", errBadAssertion)
	}
	key, ok := set.LookupKeyID(kid)
	if !ok {
		return "", time.Time{}, errUnknownKid
	}
	if ka, set := key.Algorithm(); !slices.Contains(clients.KeyAlgorithms(key), name) || (set && ka.String() != name) {
		return "", time.Time{}, fmt.Errorf("%w: alg %q does not fit key %q", errBadAssertion, alg.String(), kid)
	}
	sa, _ := jwa.LookupSignatureAlgorithm(alg.String())
	payload, err := jws.Verify([]byte(raw), jws.WithKey(sa, key))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: signature", errBadAssertion)
	}
	var c assertionClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: claims", errBadAssertion)
	}
	at := func(v *float64) time.Time { return time.Unix(int64(*v), 0) }
	switch {
	case c.Iss != id || c.Sub != id:
		return "", time.Time{}, fmt.Errorf("%w: iss and sub must be the client id", errBadAssertion)
	case !audienceHolds(c.Aud, audiences):
		return "", time.Time{}, fmt.Errorf("%w: aud", errBadAssertion)
	case c.Exp == nil:
		return "", time.Time{}, fmt.Errorf("%w: exp required", errBadAssertion)
	case !at(c.Exp).After(now.Add(-AssertionLeeway)):
		return "", time.Time{}, fmt.Errorf("%w: expired", errBadAssertion)
	case at(c.Exp).After(now.Add(MaxAssertionLifetime + AssertionLeeway)):
		return "", time.Time{}, fmt.Errorf("%w: exp more than an hour ahead", errBadAssertion)
	case c.Nbf != nil && at(c.Nbf).After(now.Add(AssertionLeeway)):
		return "", time.Time{}, fmt.Errorf("%w: not yet valid", errBadAssertion)
	case c.Iat != nil && at(c.Iat).After(now.Add(AssertionLeeway)):
		return "", time.Time{}, fmt.Errorf("%w: issued in the future", errBadAssertion)
	case c.Jti == "" || len(c.Jti) > maxJTILength:
		return "", time.Time{}, fmt.Errorf("%w: jti required (at most %d bytes)", errBadAssertion, maxJTILength)
	}
	return c.Jti, at(c.Exp), nil
}

// audienceHolds reports whether "aud" (a string or an array of strings,
// RFC 7519 section 4.1.3) holds one of want.
func audienceHolds(raw json.RawMessage, want []string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return slices.Contains(want, one)
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return false
	}
	for _, a := range many {
		if slices.Contains(want, a) {
			return true
		}
	}
	return false
}

// keyRegistry is what the assertion keys need of the client registry.
type keyRegistry interface {
	ClientKeys(ctx context.Context, id string) (clients.ClientKeys, error)
}

// assertionKeys caches each private_key_jwt client's public keys in memory,
// so an assertion costs no extra round trip: the authentication script
// compares the version verified against with the client's, and a stale
// version reloads them (StaleKeys). Keys behind a jwks_uri are fetched with
// jwk.Fetch through a client that refuses private addresses, redirects to
// http and bodies over clients.MaxJWKSBytes, and kept jwksTTL.
type assertionKeys struct {
	reg     keyRegistry
	now     func() time.Time
	cache   *lru.Cache[string, *keysEntry]
	flight  singleflight.Group
	http    *http.Client
	allowed func(netip.Addr) bool
}

type keysEntry struct {
	keys clients.ClientKeys
	// fetched is when a jwks_uri's set was fetched (zero: registered keys).
	fetched time.Time
	mu      sync.Mutex
}

// JWKSPolicy is what the operator allows of clients' jwks_uri.
type JWKSPolicy struct {
	// AllowHTTP lets a jwks_uri be http, not only https.
	AllowHTTP bool
	// AllowPrivate lets it resolve to loopback, private, link-local or
	// otherwise non-public addresses (a partner inside the operator's
	// network; tests).
	AllowPrivate bool
}

func newAssertionKeys(reg keyRegistry, now func() time.Time, policy JWKSPolicy) (*assertionKeys, error) {
	cache, err := lru.New[string, *keysEntry](10_000)
	if err != nil {
		return nil, err
	}
	k := &assertionKeys{reg: reg, now: now, cache: cache, allowed: publicAddress}
	if policy.AllowPrivate {
		k.allowed = func(netip.Addr) bool { return true }
	}
	dialer := &net.Dialer{Timeout: jwksFetchTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		// The address actually dialled, after DNS: a name that resolves to
		// a private address is refused as the address itself would be.
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !k.allowed(ap.Addr().Unmap()) {
			return fmt.Errorf("jwks_uri: address %s is not public", address)
		}
		return nil
	}}
	k.http = &http.Client{
		Timeout:   jwksFetchTimeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: jwksFetchTimeout, ResponseHeaderTimeout: jwksFetchTimeout},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= jwksMaxRedirects {
				return errors.New("jwks_uri: too many redirects")
			}
			return clients.CheckJWKSURI(req.URL.String(), policy.AllowHTTP)
		},
	}
	return k, nil
}

// publicAddress reports whether a is a public unicast address.
func publicAddress(a netip.Addr) bool {
	return a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast()
}

// get returns the client's keys, from the cache unless reload.
func (k *assertionKeys) get(ctx context.Context, id string, reload bool) (*keysEntry, error) {
	if e, ok := k.cache.Get(id); ok && !reload && (e.fetched.IsZero() || k.now().Sub(e.fetched) < jwksTTL) {
		return e, nil
	}
	v, err, _ := k.flight.Do(id, func() (any, error) {
		ck, err := k.reg.ClientKeys(ctx, id)
		if err != nil {
			return nil, err
		}
		e := &keysEntry{keys: ck}
		if ck.URL != "" {
			// A fetch that fails leaves the set empty: the assertion is
			// refused like a wrong one, and the next tries again.
			e.keys.Set, _ = k.fetch(ctx, ck.URL)
			e.fetched = k.now()
		}
		k.cache.Add(id, e)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*keysEntry), nil
}

// refetch fetches a jwks_uri client's keys again after an assertion named a
// kid they lack (its partner rotated keys), at most once per
// jwksRefetchEvery; it reports whether the keys changed.
func (k *assertionKeys) refetch(ctx context.Context, id string, e *keysEntry) bool {
	if e.keys.URL == "" {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if k.now().Sub(e.fetched) < jwksRefetchEvery {
		return false
	}
	set, err := k.fetch(ctx, e.keys.URL)
	e.fetched = k.now()
	if err != nil {
		return false
	}
	fresh := &keysEntry{keys: e.keys, fetched: e.fetched}
	fresh.keys.Set = set
	k.cache.Add(id, fresh)
	return true
}

// fetch reads a jwks_uri and checks the set as registered keys are.
func (k *assertionKeys) fetch(ctx context.Context, uri string) (jwk.Set, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	set, err := jwk.Fetch(ctx, uri, jwk.WithHTTPClient(k.http), jwk.WithMaxFetchBodySize(clients.MaxJWKSBytes))
	if err != nil {
		return nil, err
	}
	if err := clients.CheckKeys(set); err != nil {
		return nil, err
	}
	return set, nil
}

// checkAssertion verifies a client assertion against the client's keys
// (cached; fetched again for an unknown kid of a jwks_uri client) and says
// what Authenticate needs of it.
func (s *Server) checkAssertion(ctx context.Context, creds credentials, reload bool) (*clients.AssertionCheck, error) {
	check := &clients.AssertionCheck{Raw: creds.Assertion}
	e, err := s.assertionKeys.get(ctx, creds.ID, reload)
	if err != nil {
		return nil, err
	}
	check.KeysVersion = e.keys.Version
	now := s.cfg.Now()
	jti, exp, verr := verifyAssertion(creds.Assertion, creds.ID, e.keys.Set, s.audiences, now)
	if errors.Is(verr, errUnknownKid) && s.assertionKeys.refetch(ctx, creds.ID, e) {
		if e, err = s.assertionKeys.get(ctx, creds.ID, false); err != nil {
			return nil, err
		}
		jti, exp, verr = verifyAssertion(creds.Assertion, creds.ID, e.keys.Set, s.audiences, now)
	}
	if verr != nil {
		httpserver.Annotate(ctx, slog.String("assertion_refused", strings.TrimPrefix(verr.Error(), errBadAssertion.Error()+": ")))
		return check, nil
	}
	check.Verified, check.JTI, check.Expires = true, jti, exp
	return check, nil
}
