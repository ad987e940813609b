package signingkeys_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
)

const (
	issuer   = "https://issuer.signingkeys.test"
	audience = "partner-api"
)

// keySet is a set of n new keys, the first signing.
func keySet(t *testing.T, n int) *accesstoken.KeySet {
	t.Helper()
	k, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(k)
	for i := 1; i < n && err == nil; i++ {
		if k, err = accesstoken.GenerateKey(accesstoken.AlgEdDSA); err == nil {
			ks, err = ks.Staged(k)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// jwksKids lists the kids of a JWKS document.
func jwksKids(t *testing.T, doc []byte) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		if k.D != "" {
			t.Fatalf("private key %s published", k.Kid)
		}
		kids = append(kids, k.Kid)
	}
	return kids
}

// TestWithdrawThroughAuthority: a key withdrawn through the authority is
// refused by the verifier that reads it at once, its cached verification
// included; it is no longer published; the other key's tokens live on and
// the signing key signs. With the signing key withdrawn too, nothing signs
// (Issuer nil, SigningKeyID "") and nothing is published.
func TestWithdrawThroughAuthority(t *testing.T) {
	ks := keySet(t, 2)
	signing, staged := ks.KeyIDs()[0], ks.KeyIDs()[1]
	a, err := signingkeys.New(ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	if a.SigningKeyID() != signing || !slices.Equal(a.PublishedKeyIDs(), []string{signing, staged}) ||
		!slices.Equal(jwksKids(t, a.JWKS()), []string{signing, staged}) || a.Withdrawn(staged) {
		t.Fatalf("at start: signing %q, published %v, JWKS %v", a.SigningKeyID(), a.PublishedKeyIDs(), jwksKids(t, a.JWKS()))
	}
	promoted, err := ks.Promoted(staged)
	if err != nil {
		t.Fatal(err)
	}
	stagedIssuer, err := accesstoken.NewIssuer(promoted, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(a, issuer, audience, func() time.Time { return now }), 0, nil)
	issue := func(is *accesstoken.Issuer) string {
		tok, _, err := is.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	signed, stagedTok := issue(a.Issuer()), issue(stagedIssuer)
	for _, tok := range []string{signed, stagedTok} {
		if _, err := v.Verify(tok); err != nil { // cached now
			t.Fatal(err)
		}
	}

	if err := a.Use(ks, map[string]bool{staged: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(stagedTok); !errors.Is(err, accesstoken.ErrWithdrawnKey) {
		t.Errorf("token of the withdrawn key: %v, want ErrWithdrawnKey", err)
	}
	if _, err := v.Verify(signed); err != nil {
		t.Errorf("token of the signing key: %v", err)
	}
	if !a.Withdrawn(staged) || a.Withdrawn(signing) || a.SigningKeyID() != signing ||
		!slices.Equal(a.PublishedKeyIDs(), []string{signing}) || !slices.Equal(jwksKids(t, a.JWKS()), []string{signing}) {
		t.Errorf("after the withdrawal: signing %q, published %v, JWKS %v", a.SigningKeyID(), a.PublishedKeyIDs(), jwksKids(t, a.JWKS()))
	}
	if _, err := v.Verify(issue(a.Issuer())); err != nil {
		t.Errorf("a new token: %v", err)
	}

	if err := a.Use(ks, map[string]bool{staged: true, signing: true}); err != nil {
		t.Fatal(err)
	}
	if a.Issuer() != nil || a.SigningKeyID() != "" || len(a.PublishedKeyIDs()) != 0 || len(jwksKids(t, a.JWKS())) != 0 {
		t.Errorf("every key withdrawn: signing %q, published %v, JWKS %s", a.SigningKeyID(), a.PublishedKeyIDs(), a.JWKS())
	}
	if _, err := v.Verify(signed); !errors.Is(err, accesstoken.ErrWithdrawnKey) {
		t.Errorf("token of the withdrawn signing key: %v, want ErrWithdrawnKey", err)
	}
}

// TestUseCopies: the withdrawn kids given to Use are the authority's own:
// changing the map afterwards changes nothing.
func TestUseCopies(t *testing.T) {
	ks := keySet(t, 2)
	a, err := signingkeys.New(ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	withdrawn := map[string]bool{}
	if err := a.Use(ks, withdrawn); err != nil {
		t.Fatal(err)
	}
	withdrawn[ks.KeyIDs()[1]] = true
	if a.Withdrawn(ks.KeyIDs()[1]) {
		t.Error("a kid added to the map after Use counts as withdrawn")
	}
}
