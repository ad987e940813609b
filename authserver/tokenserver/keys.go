package tokenserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// keyState is what the service signs with, verifies with and publishes.
// It changes only through UseKeys.
type keyState struct {
	// issuer signs new tokens; nil while the signing key is withdrawn.
	issuer *accesstoken.Issuer
	// verifier checks tokens for introspection, caching verified
	// signatures (a resource server that introspects asks about the same
	// token for up to an hour). Each key state has its own cache, so a
	// token verified under keys since withdrawn is never answered from it.
	verifier *accesstoken.CachingVerifier
	jwks     []byte
	// signingKID and kids name the signing key and the published keys.
	signingKID string
	kids       []string
}

// errNoSigningKey: the key set's signing key is withdrawn, so no token is
// issued until a key set with another signing key is loaded.
var errNoSigningKey = &oauthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
	Description: "The service cannot sign tokens right now; retry after the number of seconds in Retry-After"}

// UseKeys makes ks the service's keys, less the keys withdrawn says are
// withdrawn (nil: none): those are no longer published at the JWKS
// endpoint, and their tokens are inactive at introspection from now on
// (a fresh cache of verified tokens starts with them). While ks's signing key is
// withdrawn, the token endpoint answers 503 and /readyz fails, so the edge
// routes token requests to replicas that have a key to sign with.
func (s *Server) UseKeys(ks *accesstoken.KeySet, withdrawn func(kid string) bool) error {
	if withdrawn == nil {
		withdrawn = func(string) bool { return false }
	}
	public := jwk.NewSet()
	all := ks.Public()
	var kids []string
	for i := range all.Len() {
		k, _ := all.Key(i)
		if kid, _ := k.KeyID(); !withdrawn(kid) {
			if err := public.AddKey(k); err != nil {
				return fmt.Errorf("jwks: %w", err)
			}
			kids = append(kids, kid)
		}
	}
	doc, err := json.Marshal(public)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	st := &keyState{
		verifier: accesstoken.NewCachingVerifier(accesstoken.NewVerifier(accesstoken.StaticKeys{Set: public}, s.cfg.Issuer, s.cfg.Audience, s.cfg.Now),
			0, s.metrics.TokenCache),
		jwks: doc, signingKID: ks.SigningKeyID(), kids: kids,
	}
	if !withdrawn(ks.SigningKeyID()) {
		if st.issuer, err = accesstoken.NewIssuer(ks, s.cfg.Issuer, s.cfg.Audience); err != nil {
			return err
		}
	}
	s.keys.Store(st)
	return nil
}

// handleJWKS serves the published keys (RFC 7517 section 5).
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request) {
	publicDocument(s.keys.Load().jwks)(w, r)
}

// VerifyContext checks a token's signature and claims against the keys the
// service publishes (withdrawn ones excluded), as introspection does,
// caching verified signatures; every token error is an
// accesstoken.ErrInvalidToken. The admin API authenticates operators with
// it.
func (s *Server) VerifyContext(ctx context.Context, token string) (*accesstoken.Claims, error) {
	return s.keys.Load().verifier.VerifyContext(ctx, token)
}

// SigningKeyID names the key tokens are signed with ("" while it is
// withdrawn and no token is issued).
func (s *Server) SigningKeyID() string {
	st := s.keys.Load()
	if st.issuer == nil {
		return ""
	}
	return st.signingKID
}

// PublishedKeyIDs names the keys published at the JWKS endpoint.
func (s *Server) PublishedKeyIDs() []string {
	return slices.Clone(s.keys.Load().kids)
}
