package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// Result is what an admission decided.
type Result int

// Results, in the order the steps can reach them.
const (
	// Admitted: a valid token of a client in good standing, of the API's
	// audience kind, under its limit.
	Admitted Result = iota
	// MissingToken: no Authorization header, or another scheme than Bearer
	// (RFC 6750 section 3.1: the challenge carries no error code).
	MissingToken
	// MalformedRequest: more than one Authorization header, or a token in
	// the URI query where the API refuses one (RFC 6750 section 3.1,
	// invalid_request).
	MalformedRequest
	// MalformedToken: a Bearer header whose token is empty, too long or not
	// one b64token (RFC 6750 section 3.1, invalid_token).
	MalformedToken
	// Invalid: the token's format, header, signature, issuer, audience or
	// claims are wrong, its key is unknown or withdrawn, or it is not valid
	// yet (RFC 6750 section 3.1, invalid_token).
	Invalid
	// Expired: the token is past its "exp" (RFC 7519 section 4.1.4).
	Expired
	// Revoked: the token's client is unknown or revoked, its credentials
	// were rotated, its secret retired or the token itself revoked.
	Revoked
	// WrongAudience: the token is genuine and its client in good standing,
	// but the client is not of the kind the API serves.
	WrongAudience
	// RateLimited: the client's requests per minute are used up;
	// Outcome.Admission.Decision says until when.
	RateLimited
	// Unavailable: the key set or the registry could not be read, so
	// nothing is decided (fail closed: 503 with Retry-After).
	Unavailable
	// InvalidProof: a DPoP-bound token came without a DPoP proof, or with
	// one that is malformed, made for another request (htm, htu, ath),
	// signed by another key than the token's cnf.jkt, or used before (RFC
	// 9449 section 7.1, invalid_dpop_proof). Outcome.Err wraps the
	// *dpop.Error, whose Description may be sent.
	InvalidProof
	// UseNonce: nonces are on and the proof carried none, or a stale one
	// (RFC 9449 section 9, use_dpop_nonce); Outcome.Nonce is a fresh one.
	UseNonce
	// WrongCertificate: a certificate-bound token (cnf.x5t#S256) came
	// over a connection without a client certificate, or with another one
	// (RFC 8705 section 3: 401, invalid_token). Checked right after the
	// token verified, before the DPoP proof and the registry.
	WrongCertificate
)

var resultNames = [...]string{"admitted", "missing token", "malformed request", "malformed token", "invalid", "expired",
	"revoked", "wrong audience kind", "rate limited", "unavailable", "invalid DPoP proof", "use DPoP nonce", "wrong client certificate"}

func (r Result) String() string {
	if r < 0 || int(r) >= len(resultNames) {
		return fmt.Sprintf("Result(%d)", int(r))
	}
	return resultNames[r]
}

// Outcome is the decision on one request.
type Outcome struct {
	Result Result
	// Claims are the verified token's claims, from Revoked on and for
	// InvalidProof and UseNonce (nil before): shared with the verifier's
	// cache, read-only.
	Claims *accesstoken.Claims
	// Admission is what the registry said of the token's client, from
	// Revoked on (for Unavailable: the zero value).
	Admission clients.APIAdmission
	// Err is the cause of a refusal, for the logs only: never sent to a
	// client (but a *dpop.Error's fixed Description). Nil when admitted.
	Err error
	// DPoP is set when the request used the DPoP scheme or its token is
	// DPoP-bound: a refusal then answers with a DPoP challenge
	// (dpop.Challenge, RFC 9449 section 7.1) instead of the Bearer one.
	DPoP bool
	// Nonce, when not empty, is the DPoP-Nonce the answer carries (RFC 9449
	// section 9): set on every DPoP outcome while nonces are on.
	Nonce string
}

// Verifier checks a token's signature and claims (an
// *accesstoken.CachingVerifier over the server's signing-key authority).
// Its errors are accesstoken.ErrInvalidToken for a bad token, anything else
// for a key set that could not be read.
type Verifier interface {
	VerifyContext(ctx context.Context, token string) (*accesstoken.Claims, error)
}

// Registry decides one API request of a token's client in one Redis round
// trip (clients.Store.AdmitAPI).
type Registry interface {
	AdmitAPI(ctx context.Context, t clients.TokenRef, now func() time.Time) (clients.APIAdmission, error)
}

// Clients is the kind of client an API serves.
type Clients int

const (
	// Partners: every client but operator clients (the partner API).
	Partners Clients = iota
	// Operators: operator clients only (the admin API).
	Operators
)

// Config says what an API admits.
type Config struct {
	// Clients is the kind of client admitted.
	Clients Clients
	// RefuseQueryToken makes an access_token parameter in the URI query
	// (RFC 6750 section 2.3, which URIs in logs make unsafe) a
	// MalformedRequest, whatever the header says.
	RefuseQueryToken bool
	// RateNow is the clock of the per-client limit (nil: the Redis
	// server's, one clock for every replica).
	RateNow func() time.Time

	// DPoP (RFC 9449; dpop.go).

	// PublicBaseURL is the scheme and authority (and path prefix, if any)
	// the API is reached at from outside, e.g. "https://api.example.com":
	// a proof's htu is checked against it plus the request's path.
	// Required: it is configuration, never the request's word (a Host or
	// X-Forwarded-Host header names whatever the caller wants; issue 59
	// point 8).
	PublicBaseURL string
	// Nonces, when not nil, requires a server nonce in every proof (RFC
	// 9449 section 9): a *dpopnonce.Shared, the same for every replica.
	Nonces Nonces
	// Now is the clock proofs' iat and nonces are checked against (nil:
	// time.Now).
	Now func() time.Time

	// Certificates reads a request's client certificate (RFC 8705
	// section 3; mtls.go): the TLS connection's, or a trusted proxy's
	// Client-Cert field. Its Trust is the API's trusted proxies.
	Certificates clientcert.Source
}

// Nonces issues and checks server nonces (*dpopnonce.Shared,
// *dpop.NonceSource).
type Nonces interface {
	Nonce(now time.Time) string
	Valid(nonce string, now time.Time) bool
}

// Admission admits requests. It is immutable and safe for concurrent use.
type Admission struct {
	cfg      Config
	tokens   Verifier
	registry Registry
}

// New returns the admission of an API that verifies tokens with tokens and
// reads client standing from registry.
func New(cfg Config, tokens Verifier, registry Registry) (*Admission, error) {
	if tokens == nil || registry == nil {
		return nil, errors.New("admission: a verifier and a registry are required")
	}
	if err := CheckPublicBaseURL(cfg.PublicBaseURL); err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}
	cfg.PublicBaseURL = strings.TrimSuffix(cfg.PublicBaseURL, "/")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Admission{cfg: cfg, tokens: tokens, registry: registry}, nil
}

// ErrNoPublicBaseURL: an API that checks DPoP proofs was given no public
// base URL (Config.PublicBaseURL).
var ErrNoPublicBaseURL = errors.New("a public base URL is required: a DPoP proof's htu is checked against it (RFC 9449 section 4.3), never against the request's Host")

// CheckPublicBaseURL is the one rule for an API's public base URL: given,
// and an absolute http or https URL (dpop.NormalizeURI), e.g.
// "https://api.example.com".
func CheckPublicBaseURL(base string) error {
	if base == "" {
		return ErrNoPublicBaseURL
	}
	if _, ok := dpop.NormalizeURI(base); !ok {
		return fmt.Errorf("public base URL %q: want an absolute http or https URL", base)
	}
	return nil
}

// Credentials are what a request says about its access token, parsed once.
type Credentials struct {
	// Token is the access token of the Authorization header.
	Token string
	// DPoP: the scheme was "DPoP" (RFC 9449 section 7.1), not "Bearer".
	DPoP bool
}

// Admit decides r. It never writes to r; ctx bounds the verifier's key
// fetch and the registry's round trip.
func (a *Admission) Admit(ctx context.Context, r *http.Request) Outcome {
	cred, res, err := a.parse(r)
	if err != nil {
		return a.finish(Outcome{Result: res, Err: err, DPoP: cred.DPoP})
	}
	claims, err := a.tokens.VerifyContext(ctx, cred.Token)
	switch {
	case errors.Is(err, accesstoken.ErrExpired):
		return a.finish(Outcome{Result: Expired, Err: err, DPoP: cred.DPoP})
	case errors.Is(err, accesstoken.ErrInvalidToken):
		return a.finish(Outcome{Result: Invalid, Err: err, DPoP: cred.DPoP})
	case err != nil:
		return Outcome{Result: Unavailable, Err: fmt.Errorf("verify token: %w", err), DPoP: cred.DPoP}
	}
	if claims.BoundCertificate() != "" {
		if err := a.checkCertificate(r, claims); err != nil {
			return a.finish(Outcome{Result: WrongCertificate, Claims: claims, Err: err, DPoP: cred.DPoP || claims.BoundKey() != ""})
		}
	}
	ref := clients.TokenRefOf(claims)
	bound := claims.BoundKey() != ""
	if cred.DPoP || bound {
		out := a.checkProof(r, cred, claims, &ref)
		if out.Result != Admitted {
			return a.finish(out)
		}
	}
	adm, err := a.registry.AdmitAPI(ctx, ref, a.cfg.RateNow)
	if err != nil {
		return Outcome{Result: Unavailable, Claims: claims, Err: err, DPoP: cred.DPoP}
	}
	out := Outcome{Claims: claims, Admission: adm, DPoP: cred.DPoP || bound}
	switch {
	case adm.Outcome == clients.Replayed:
		out.Result, out.Err = InvalidProof, fmt.Errorf("client %s: %w", claims.ClientID, dpop.ErrReplayed)
	case adm.Outcome == clients.Dead:
		out.Result, out.Err = Revoked, fmt.Errorf("client %s revoked or credentials rotated", claims.ClientID)
	case (adm.Description.Audience == clients.AudienceOperator) != (a.cfg.Clients == Operators):
		out.Result, out.Err = WrongAudience, fmt.Errorf("client %s of audience %q", claims.ClientID, adm.Description.Audience)
	case adm.Outcome == clients.Limited:
		out.Result, out.Err = RateLimited, fmt.Errorf("client %s over its limit", claims.ClientID)
	case adm.Outcome == clients.Admitted:
		out.Result = Admitted
	default:
		out.Result, out.Err = Unavailable, fmt.Errorf("admit %s: unknown outcome %d", claims.ClientID, adm.Outcome)
	}
	return a.finish(out)
}

// parse reads the request's credentials (RFC 6750 section 2.1, RFC 9449
// section 7.1):
//
//	credentials = ( "Bearer" / "DPoP" ) 1*SP b64token
//	b64token    = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//
// No header, or another scheme, is MissingToken; a Bearer or DPoP header whose token
// is missing, longer than accesstoken.MaxTokenLength or not one b64token is
// MalformedToken; two Authorization headers, or (Config.RefuseQueryToken)
// an access_token query parameter, are MalformedRequest.
func (a *Admission) parse(r *http.Request) (Credentials, Result, error) {
	if a.cfg.RefuseQueryToken && r.URL != nil && strings.Contains(r.URL.RawQuery, "access_token") {
		if q, err := url.ParseQuery(r.URL.RawQuery); err != nil || q.Has("access_token") {
			return Credentials{}, MalformedRequest, errors.New("access_token in the query")
		}
	}
	auth := r.Header["Authorization"]
	cred := Credentials{DPoP: len(auth) == 1 && isDPoPScheme(auth[0])}
	if cred.DPoP {
		// RFC 9449 section 7.1: the same b64token after "DPoP" (the scheme
		// case-insensitive, RFC 9110 section 11.1).
		auth = []string{"Bearer" + auth[0][len("DPoP"):]}
	}
	token, err := accesstoken.BearerToken(auth)
	switch {
	case errors.Is(err, accesstoken.ErrNoBearer):
		return cred, MissingToken, err
	case errors.Is(err, accesstoken.ErrMalformedRequest):
		return cred, MalformedRequest, err
	case err != nil:
		return cred, MalformedToken, err
	}
	cred.Token = token
	return cred, Admitted, nil
}
