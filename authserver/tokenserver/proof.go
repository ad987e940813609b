package tokenserver

import (
	"errors"
	"net/http"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// checkProof checks a token request's DPoP header (RFC 9449 section 4.3)
// and records the outcome in req: nothing without the header; else the
// proof as checked (clients.ProofCheck) and, when it did not verify, the
// refusal.
//
// Order (RFC 9449 section 5, RFC 6749 section 5.2): the proof is verified
// here, before the client authenticates, because verifying takes no I/O
// and its single-use mark must ride in the authentication's one round trip
// (section 11.1); but its verdict is decided in that round trip only after
// the credential (clients.Authenticate), so a caller that does not
// authenticate gets invalid_client whatever its proof and learns nothing of
// it, and no mark is written for it. The verification's cost is bounded
// (dpop.MaxProofLength, and the key's size, package keysize) and the
// address's ceiling of failed requests bounds an unauthenticated caller's
// tries: while an address's ceiling is spent, its proofs are not verified
// before the credential beside them is known to hold (deferProof), so a
// refused caller's requests cost no signature check at all.
//
// The proof's htu is compared with the token endpoint's public URL, the
// issuer's base plus PathToken (the token_endpoint of the metadata), never
// the address the server listens on (section 4.3, check 9); htm with POST;
// no access token is presented, so "ath" is not looked at; the iat window
// is dpop.DefaultWindow and dpop.DefaultLeeway around the server's clock.
//
// Server nonces (section 8) are required when the service runs with them
// (Deps.Nonces, DPOP_NONCES=true): every answer to a request with a proof
// carries the current nonce in DPoP-Nonce (section 8.2: success and error
// answers alike), and a proof without a valid one is refused with
// use_dpop_nonce (section 8, after the credential, like every other
// verdict on the proof), so the client retries with the nonce.
func (s *Server) checkProof(w http.ResponseWriter, r *http.Request, req *clientRequest) {
	headers := r.Header.Values("DPoP")
	if len(headers) == 0 {
		return
	}
	now := s.cfg.Now()
	in := dpop.Input{Headers: headers, Method: r.Method, URI: s.tokenURL, AltURI: s.mtlsTokenURL, Now: now}
	if s.nonces != nil {
		in.Nonces = s.nonces
		w.Header().Set("DPoP-Nonce", s.nonces.Nonce(now))
	}
	req.proofIn = in
	if deferProof(req, s.ceiling.spent(limitKey(s.cfg.Trust.Of(r)))) {
		// Passed as refused until verified: a credential that fails is
		// answered as such whatever the proof (clients.Authenticate).
		req.Proof, req.proofDeferred = &clients.ProofCheck{}, true
		return
	}
	req.verifyProof()
}

// deferProof decides whether a token request's proof is verified only
// once its credential is known to hold (authenticate): with a client
// assertion (or a client certificate), always, since the assertion's own
// signature check (the certificate's) comes first
// and a caller whose assertion fails is refused whatever its proof; with a
// secret, while the address's ceiling of failed requests is spent, when
// the proof's verdict then costs a second authentication round trip, but
// only for a secret that held.
func deferProof(req *clientRequest, ceilingSpent bool) bool {
	return req.Client.Assertion != "" || req.Client.Certificate || ceilingSpent
}

// verifyProof verifies the request's proof (dpop.Verify) and records the
// outcome in req.
func (req *clientRequest) verifyProof() {
	req.proofDeferred = false
	p, err := dpop.Verify(req.proofIn)
	if err != nil {
		req.Proof, req.ProofErr = &clients.ProofCheck{}, err
		return
	}
	req.Proof, req.ProofErr = &clients.ProofCheck{Verified: true, Proof: p, TTL: dpop.ReplayTTL(0, 0)}, nil
}

// nonceSource issues and checks the DPoP server nonces shared by every
// replica (a *dpopnonce.Shared).
type nonceSource interface {
	Nonce(now time.Time) string
	Valid(nonce string, now time.Time) bool
}

// errProofRequired refuses a token request without a DPoP proof from a
// client registered with dpop_bound_access_tokens (RFC 9449 section 5.2).
var errProofRequired = &oauthError{Status: http.StatusBadRequest, Code: dpop.CodeInvalidProof,
	Description: "a DPoP proof is required: this client is registered for DPoP-bound access tokens only"}

// proofError is the answer to a refused proof (RFC 9449 section 5): 400
// with its code (invalid_dpop_proof, or use_dpop_nonce when nonces are
// required and the proof lacks a valid one) and its description, a fixed sentence of
// package dpop that quotes nothing of the proof.
func proofError(err error) *oauthError {
	var de *dpop.Error
	if !errors.As(err, &de) {
		return &oauthError{Status: http.StatusBadRequest, Code: dpop.CodeInvalidProof, Description: "the DPoP proof is invalid"}
	}
	return &oauthError{Status: http.StatusBadRequest, Code: de.Code(), Description: de.Description}
}
