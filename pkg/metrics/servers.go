package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// TokenService is the token service's metrics: the shared ones and its own,
// tokens issued, requests refused and client credentials checked. It
// implements the metrics interface of package tokenserver.
type TokenService struct {
	*Metrics
	issued  prometheus.Counter
	revoked prometheus.Counter
	refused *prometheus.CounterVec
	checked *prometheus.CounterVec
	jwksURI *prometheus.CounterVec
}

// tokenRefusals are the reasons of refused token and introspection
// requests: the OAuth error codes the token service answers (RFC 6749
// section 5.2, slow_down of RFC 8628 section 3.5, temporarily_unavailable,
// server_error, invalid_dpop_proof of RFC 9449 section 5). Any other code
// is counted as "other".
var tokenRefusals = []string{
	"invalid_request", "invalid_client", "invalid_scope", "unsupported_grant_type",
	"slow_down", "temporarily_unavailable", "server_error", "unauthorized_client",
	"invalid_dpop_proof",
}

// tokenEndpoints are the endpoints whose refusals are counted.
var tokenEndpoints = []string{"token", "introspect", "revoke"}

// credentialMethods are the client authentication methods whose checks are
// counted (clients.AuthClientSecret, clients.AuthPrivateKeyJWT).
var credentialMethods = []string{"client_secret", "private_key_jwt"}

// jwksURIResults are the results of fetches of clients' jwks_uri.
var jwksURIResults = []string{"success", "failure", "refused"}

// NewTokenService registers the token service's metrics in m.
func NewTokenService(m *Metrics) *TokenService {
	t := &TokenService{
		Metrics: m,
		issued: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "tokens_issued_total",
			Help: "Access tokens issued.",
		}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "tokens_revoked_total",
			Help: "Access tokens revoked by their clients (RFC 7009).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "token_refusals_total",
			Help: "Token, introspection and revocation requests refused, by endpoint (token, introspect, revoke) and OAuth error code.",
		}, []string{"endpoint", "reason"}),
		checked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "client_credentials_checked_total",
			Help: "Client credentials actually compared against the registry, by method (client_secret, private_key_jwt): " +
				"a climb without tokens issued is someone guessing; a flat line under a flood of invalid_client or slow_down " +
				"shows the failure budget refusing them unchecked.",
		}, []string{"method"}),
		jwksURI: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "jwks_uri_fetches_total",
			Help: "Fetches of private_key_jwt clients' jwks_uri, by result: success, failure (unreachable, an error status, " +
				"not a valid key set) or refused (by the jwks_uri policy: a refused address, scheme or redirect). " +
				"Each failure or refusal is logged with the client id.",
		}, []string{"result"}),
	}
	m.Registry.MustRegister(t.issued, t.revoked, t.refused, t.checked, t.jwksURI)
	for _, r := range jwksURIResults {
		t.jwksURI.WithLabelValues(r)
	}
	for _, method := range credentialMethods {
		t.checked.WithLabelValues(method)
	}
	for _, e := range tokenEndpoints {
		for _, r := range tokenRefusals {
			t.refused.WithLabelValues(e, r)
		}
	}
	return t
}

// TokenIssued counts one issued access token.
func (t *TokenService) TokenIssued() { t.issued.Inc() }

// TokenRevoked counts one access token revoked by its client.
func (t *TokenService) TokenRevoked() { t.revoked.Inc() }

// Refused counts a refused request of endpoint ("token", "introspect" or
// "revoke") answered with the OAuth error code reason.
func (t *TokenService) Refused(endpoint, reason string) {
	if !contains(tokenEndpoints, endpoint) {
		endpoint = "introspect"
	}
	if !contains(tokenRefusals, reason) {
		reason = "other"
	}
	t.refused.WithLabelValues(endpoint, reason).Inc()
}

// CredentialChecked counts one client credential compared against the
// registry, by method ("client_secret" or "private_key_jwt"; any other is
// ignored, so that labels stay bounded).
func (t *TokenService) CredentialChecked(method string) {
	if contains(credentialMethods, method) {
		t.checked.WithLabelValues(method).Inc()
	}
}

// JWKSURIFetched counts one fetch of a client's jwks_uri by result
// ("success", "failure" or "refused"; any other is ignored, so that labels
// stay bounded).
func (t *TokenService) JWKSURIFetched(result string) {
	if contains(jwksURIResults, result) {
		t.jwksURI.WithLabelValues(result).Inc()
	}
}

// ResourceServer is the resource server's metrics: the shared ones and its
// own, refused API requests and JWKS fetches. It implements the Metrics
// interface of package api.
type ResourceServer struct {
	*Metrics
	refused *prometheus.CounterVec
	jwks    *prometheus.CounterVec
}

// apiRefusals are the reasons of the API's 401, 403 and 429 answers.
var apiRefusals = map[string]int{
	ReasonMissingToken:      http.StatusUnauthorized,
	ReasonInvalidToken:      http.StatusUnauthorized,
	ReasonExpiredToken:      http.StatusUnauthorized,
	ReasonRevoked:           http.StatusUnauthorized,
	ReasonInsufficientScope: http.StatusForbidden,
	ReasonRateLimited:       http.StatusTooManyRequests,
}

// Reasons of refused API requests.
const (
	// ReasonMissingToken: no bearer token (RFC 6750 section 3.1).
	ReasonMissingToken = "missing_token"
	// ReasonInvalidToken: malformed, badly signed, foreign or unknown key.
	ReasonInvalidToken = "invalid_token"
	// ReasonExpiredToken: past its "exp".
	ReasonExpiredToken = "expired_token"
	// ReasonRevoked: the client was revoked or its secret rotated since
	// the token was issued.
	ReasonRevoked = "revoked"
	// ReasonInsufficientScope: the token lacks the endpoint's scope.
	ReasonInsufficientScope = "insufficient_scope"
	// ReasonRateLimited: the client is over its per-minute limit.
	ReasonRateLimited = "rate_limited"
)

// NewResourceServer registers the resource server's metrics in m.
func NewResourceServer(m *Metrics) *ResourceServer {
	rs := &ResourceServer{
		Metrics: m,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "api_refusals_total",
			Help: "API requests answered 401, 403 or 429, by status and reason.",
		}, []string{"status", "reason"}),
		jwks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "jwks_fetches_total",
			Help: "Fetches of the token service's key set (scheduled and on demand), by result (success or failure).",
		}, []string{"result"}),
	}
	m.Registry.MustRegister(rs.refused, rs.jwks)
	for reason, status := range apiRefusals {
		rs.refused.WithLabelValues(strconv.Itoa(status), reason)
	}
	rs.jwks.WithLabelValues("success")
	rs.jwks.WithLabelValues("failure")
	return rs
}

// Refused counts an API answer of status 401, 403 or 429 for reason (one of
// the Reason constants; others are ignored, so that labels stay bounded).
func (rs *ResourceServer) Refused(status int, reason string) {
	if want, ok := apiRefusals[reason]; ok && want == status {
		rs.refused.WithLabelValues(strconv.Itoa(status), reason).Inc()
	}
}

// JWKSTransport counts every fetch of the key set made through it: give it
// to the JWKS client (jwks.Options.HTTPClient). A fetch succeeds when it
// answers 200.
func (rs *ResourceServer) JWKSTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			rs.jwks.WithLabelValues("failure").Inc()
		} else {
			rs.jwks.WithLabelValues("success").Inc()
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
