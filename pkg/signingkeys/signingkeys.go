package signingkeys

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// Authority holds the signing keys in force. It is safe for concurrent
// use; every read sees one whole state.
type Authority struct {
	issuer, audience string
	state            atomic.Pointer[state]
}

// state is what the keys are at one time. It is never modified.
type state struct {
	// issuer signs new tokens; nil while the signing key is withdrawn.
	issuer *accesstoken.Issuer
	// public is the published keys: the set's public keys less the
	// withdrawn ones; jwks is their JWKS document.
	public jwk.Set
	jwks   []byte
	// signingKID and kids name the set's signing key and the published
	// keys.
	signingKID string
	kids       []string
	withdrawn  map[string]bool
}

var _ accesstoken.KeySource = (*Authority)(nil)

// New returns the authority over ks, none of whose keys is withdrawn yet,
// for tokens with the given "iss" and "aud".
func New(ks *accesstoken.KeySet, issuer, audience string) (*Authority, error) {
	a := &Authority{issuer: issuer, audience: audience}
	if err := a.Use(ks, nil); err != nil {
		return nil, err
	}
	return a, nil
}

// Use makes ks the keys in force, less the keys withdrawn names (a
// keywithdrawal.State's Kids; nil: none): those are no longer published, their tokens are refused by
// every verifier that reads the authority from now on, and while ks's
// signing key is among them no token is signed.
func (a *Authority) Use(ks *accesstoken.KeySet, withdrawn map[string]bool) error {
	st := &state{signingKID: ks.SigningKeyID(), public: jwk.NewSet(), withdrawn: maps.Clone(withdrawn)}
	all := ks.Public()
	for i := range all.Len() {
		k, _ := all.Key(i)
		kid, _ := k.KeyID()
		if st.withdrawn[kid] {
			continue
		}
		if err := st.public.AddKey(k); err != nil {
			return fmt.Errorf("signing keys: %w", err)
		}
		st.kids = append(st.kids, kid)
	}
	var err error
	if st.jwks, err = json.Marshal(st.public); err != nil {
		return fmt.Errorf("signing keys: jwks: %w", err)
	}
	if !st.withdrawn[st.signingKID] {
		if st.issuer, err = accesstoken.NewIssuer(ks, a.issuer, a.audience); err != nil {
			return err
		}
	}
	a.state.Store(st)
	return nil
}

// KeySet returns the published public keys (accesstoken.KeySource); it
// never fails.
func (a *Authority) KeySet() (jwk.Set, error) { return a.state.Load().public, nil }

// Withdrawn reports whether kid is withdrawn (accesstoken.KeySource).
func (a *Authority) Withdrawn(kid string) bool { return a.state.Load().withdrawn[kid] }

// Issuer signs new tokens with the signing key; it is nil while that key
// is withdrawn.
func (a *Authority) Issuer() *accesstoken.Issuer { return a.state.Load().issuer }

// JWKS is the JWK set document of the published keys (RFC 7517 section 5).
// It must not be modified.
func (a *Authority) JWKS() []byte { return a.state.Load().jwks }

// SigningKeyID names the key tokens are signed with ("" while it is
// withdrawn and no token is signed).
func (a *Authority) SigningKeyID() string {
	st := a.state.Load()
	if st.issuer == nil {
		return ""
	}
	return st.signingKID
}

// PublishedKeyIDs names the published keys, the signing key first.
func (a *Authority) PublishedKeyIDs() []string { return slices.Clone(a.state.Load().kids) }
