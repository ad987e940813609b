package admission

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// isDPoPScheme reports whether an Authorization value uses the DPoP scheme
// (RFC 9449 section 7.1), matched case-insensitively (RFC 9110 section
// 11.1): "DPoP" alone or then a space, as parse reads "Bearer".
func isDPoPScheme(v string) bool {
	return len(v) >= len("DPoP") && strings.EqualFold(v[:len("DPoP")], "DPoP") && (len(v) == len("DPoP") || v[len("DPoP")] == ' ')
}

// errUnboundDPoP: a token that is not DPoP-bound presented with the DPoP
// scheme. RFC 9449 section 7.2 has the resource server check the binding
// of a DPoP token; a token without cnf has none to check, so it is refused
// (invalid_token) rather than admitted as a bearer token under another
// name.
var errUnboundDPoP = fmt.Errorf("%w: a bearer token presented with the DPoP scheme", accesstoken.ErrInvalidToken)

// errBoundBearer: a DPoP-bound token presented with the Bearer scheme (RFC
// 9449 section 7.2: without its proof, a bound token is worth nothing).
var errBoundBearer = fmt.Errorf("%w: a DPoP-bound token presented with the Bearer scheme", accesstoken.ErrInvalidToken)

// checkProof checks the request's DPoP proof against a DPoP request's
// verified token (RFC 9449 section 7.1): the scheme and the binding agree,
// the proof verifies for this request (method, public URI, ath, iat,
// nonce) and is signed by the token's cnf.jkt key (section 6.1). When it
// holds, ref gains the proof's replay mark, which the registry's round
// trip sets (section 11.1). It returns Admitted, or the refusal.
func (a *Admission) checkProof(r *http.Request, cred Credentials, claims *accesstoken.Claims, ref *clients.TokenRef) Outcome {
	switch {
	case claims.BoundKey() == "":
		return Outcome{Result: Invalid, Err: errUnboundDPoP, DPoP: true}
	case !cred.DPoP:
		return Outcome{Result: Invalid, Err: errBoundBearer, DPoP: true}
	}
	out := Outcome{Claims: claims, DPoP: true}
	in := dpop.Input{
		Headers:     r.Header.Values("DPoP"),
		Method:      r.Method,
		URI:         a.publicURI(r),
		AccessToken: cred.Token,
		Now:         a.cfg.Now(),
	}
	if a.cfg.Nonces != nil {
		in.Nonces = a.cfg.Nonces
	}
	proof, err := dpop.Verify(in)
	if err == nil {
		err = dpop.CheckBinding(proof, claims.BoundKey())
	}
	switch {
	case errors.Is(err, dpop.ErrUseNonce):
		out.Result, out.Err = UseNonce, err
	case err != nil:
		out.Result, out.Err = InvalidProof, err
	default:
		out.Result = Admitted
		ref.DPoPReplay = dpop.ReplayKey(proof)
		ref.DPoPReplayTTL = dpop.ReplayTTL(in.Window, in.Leeway)
	}
	return out
}

// publicURI is the URI a proof's htu must name (RFC 9449 section 4.3,
// check 9): the configured public base URL plus the request's path, never
// the Host or forwarded headers the request carries. Its query is left
// out: htu has none.
func (a *Admission) publicURI(r *http.Request) string {
	return a.cfg.PublicBaseURL + r.URL.EscapedPath()
}

// finish adds a fresh DPoP-Nonce to a DPoP outcome while nonces are on
// (RFC 9449 section 9): a refusal's client retries with it, an admitted
// one uses it next.
func (a *Admission) finish(out Outcome) Outcome {
	if out.DPoP && a.cfg.Nonces != nil {
		out.Nonce = a.cfg.Nonces.Nonce(a.cfg.Now())
	}
	return out
}
