package partnerclient

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// AuthStyle is how the client authenticates to the token endpoint.
type AuthStyle int

const (
	// AuthBasic sends the client id and secret in HTTP Basic, each
	// form-urlencoded first (RFC 6749 section 2.3.1): client_secret_basic,
	// the method the API prefers.
	AuthBasic AuthStyle = iota
	// AuthForm sends them as the client_id and client_secret form
	// parameters: client_secret_post.
	AuthForm
	// AuthPrivateKeyJWT sends client_id and a JWT signed with
	// Config.PrivateKey as client_assertion (RFC 7523 section 2.2, RFC 7521
	// section 4.2): private_key_jwt. Setting PrivateKey selects it.
	AuthPrivateKeyJWT
	// AuthTLSClient sends client_id alone over a mutual-TLS connection
	// presenting Config.Certificate (RFC 8705 section 2: tls_client_auth
	// or self_signed_tls_client_auth, as the client is registered).
	// Setting Certificate without a secret or a private key selects it.
	AuthTLSClient
)

// Defaults of Config.
const (
	DefaultRenewBefore = 60 * time.Second
	DefaultMaxWait     = 61 * time.Second // the servers' longest Retry-After (60, for a full minute), and a second to spare
	DefaultMaxRetries  = 3
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 8 * time.Second
	DefaultTokenPath   = "/api/v1/oauth/token/"
	// DefaultRevocationPath is the revocation endpoint below BaseURL
	// (RFC 7009 section 2).
	DefaultRevocationPath = "/api/v1/oauth/revoke/"
)

// Config configures a TokenSource and the clients built on it. Only
// BaseURL (or TokenURL), ClientID and either ClientSecret or PrivateKey
// and KeyID are required. A Config prints, formats and logs without its
// secret or private key.
type Config struct {
	// BaseURL is the API's base address, such as "https://api.example.com":
	// the token endpoint is BaseURL + DefaultTokenPath unless TokenURL is
	// set, and Client calls paths below it.
	BaseURL string
	// TokenURL overrides the token endpoint's address.
	TokenURL string
	// ClientID is the client's identifier ("svc_...").
	ClientID string
	// ClientSecret is the client's secret ("svc_cs_..."). It is sent only
	// to the token endpoint, and never appears in an error or a log.
	ClientSecret string
	// Scopes narrows the token to fewer scopes than the client holds
	// (empty: every scope the client holds).
	Scopes []string
	// AuthStyle is how the secret is sent (default AuthBasic; with
	// PrivateKey, AuthPrivateKeyJWT).
	AuthStyle AuthStyle

	// PrivateKey, instead of ClientSecret, authenticates the client with
	// private_key_jwt (RFC 7523 section 2.2): every token and revocation
	// request carries a fresh JWT signed with it. Its public key is the one
	// registered for the client. Any crypto.Signer works, such as a key in
	// an HSM or a cloud KMS; ParsePrivateJWK reads one from a JWK. It never
	// appears in an error or a log, nor do the assertions.
	PrivateKey crypto.Signer
	// KeyID is the "kid" of the public key registered for PrivateKey,
	// sent in every assertion's JOSE header (required with PrivateKey).
	KeyID string
	// Algorithm is the JWS algorithm of the assertions: ES256, ES384,
	// RS256, RS384, PS256, EdDSA or Ed25519, fitting PrivateKey (empty: ES256 or
	// ES384 by curve, RS256 for RSA, EdDSA for Ed25519).
	Algorithm string
	// AssertionAudience is the assertions' "aud" (empty: the token URL).
	// The server accepts its issuer identifier or its token endpoint URL
	// (RFC 7523 section 3, item 3).
	AssertionAudience string
	// RevocationURL overrides the revocation endpoint's address (RFC 7009
	// section 2; default BaseURL + DefaultRevocationPath).
	RevocationURL string

	// DPoPKey, when set, binds the tokens to this key with DPoP (RFC 9449):
	// every token request carries a proof signed with it, the token is
	// DPoP-bound (token_type DPoP, its cnf.jkt the key's thumbprint), and
	// Transport sends it as "Authorization: DPoP" with a fresh proof per
	// request. Any crypto.Signer of ECDSA P-256 or P-384, Ed25519 or RSA
	// (2048 to 4096 bits, what the servers verify) works; it should be a key of its own, not
	// PrivateKey. It never appears in an error or a log, nor do the
	// proofs. See dpop.go.
	DPoPKey crypto.Signer
	// DPoPAlgorithm is the JWS algorithm of the proofs: ES256, ES384,
	// RS256, PS256, EdDSA or Ed25519, fitting DPoPKey (empty: ES256 or ES384 by
	// curve, RS256 for RSA, EdDSA for Ed25519).
	DPoPAlgorithm string

	// RenewBefore is how long before its expiry a cached token is renewed
	// (0: DefaultRenewBefore, 60 s, as the API recommends).
	RenewBefore time.Duration
	// MaxWait is the longest Retry-After the client waits for (0:
	// DefaultMaxWait). A longer one, or one past the request's context
	// deadline, is not waited for: the 429 is returned at once.
	MaxWait time.Duration
	// MaxRetries bounds the retries of one request after a 429, a 5xx or
	// (token endpoint only) a failed connection (0: DefaultMaxRetries;
	// negative: no retries). The single retry after a 401 is not counted.
	MaxRetries int
	// BaseDelay and MaxDelay shape the exponential backoff of 5xx retries
	// without Retry-After: attempt n waits a random duration between half
	// and all of min(MaxDelay, BaseDelay*2^n) (0: DefaultBaseDelay,
	// DefaultMaxDelay).
	BaseDelay, MaxDelay time.Duration

	// Certificate, when set, is the client's TLS client certificate (RFC
	// 8705): every connection to the token endpoint and the API presents
	// it, so the tokens are bound to it (cnf.x5t#S256) and the API admits
	// them over those connections only. Without ClientSecret or
	// PrivateKey it also authenticates the client (AuthTLSClient). With
	// HTTPClient nil, the client's own transport presents it; with an
	// HTTPClient of yours, that client's transport must (Certificate then
	// only selects AuthTLSClient). Its private key never appears in an
	// error or a log.
	Certificate *tls.Certificate

	// HTTPClient sends the token requests, and its Transport the API
	// requests of NewHTTPClient (nil: http.DefaultClient, or with
	// Certificate a client presenting it).
	HTTPClient *http.Client
	// Logger receives one record per retry and per token fetched (nil: no
	// logs). Records never hold a secret or a token.
	Logger *slog.Logger

	// Now is the clock of token expiry and of Retry-After dates (nil:
	// time.Now). Tests inject one to renew without waiting.
	Now func() time.Time
	// Sleep waits d or until ctx is done, returning ctx.Err() then (nil: a
	// timer). Tests inject one to retry without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a duration in [0, d] (nil: uniform random).
	Jitter func(d time.Duration) time.Duration
}

// String describes the configuration without its secret or private key.
func (c Config) String() string {
	if c.PrivateKey != nil {
		return fmt.Sprintf("partnerclient.Config{BaseURL: %q, TokenURL: %q, ClientID: %q, PrivateKey: (redacted), KeyID: %q, Algorithm: %q, Scopes: %q}",
			c.BaseURL, c.tokenURL(), c.ClientID, c.KeyID, c.Algorithm, c.Scopes)
	}
	return fmt.Sprintf("partnerclient.Config{BaseURL: %q, TokenURL: %q, ClientID: %q, ClientSecret: %s, Scopes: %q}",
		c.BaseURL, c.tokenURL(), c.ClientID, redacted(c.ClientSecret), c.Scopes)
}

// GoString is String: %#v must not print the secret either.
func (c Config) GoString() string { return c.String() }

// LogValue logs the configuration without its secret or private key
// (log/slog).
func (c Config) LogValue() slog.Value {
	if c.PrivateKey != nil {
		return slog.GroupValue(slog.String("token_url", c.tokenURL()), slog.String("client_id", c.ClientID),
			slog.String("private_key", "(redacted)"), slog.String("key_id", c.KeyID), slog.String("algorithm", c.Algorithm))
	}
	return slog.GroupValue(slog.String("token_url", c.tokenURL()), slog.String("client_id", c.ClientID),
		slog.String("client_secret", redacted(c.ClientSecret)))
}

func redacted(secret string) string {
	if secret == "" {
		return "(empty)"
	}
	return "(redacted)"
}

func (c Config) tokenURL() string {
	if c.TokenURL != "" {
		return c.TokenURL
	}
	if c.BaseURL == "" {
		return ""
	}
	u, err := url.JoinPath(c.BaseURL, DefaultTokenPath)
	if err != nil {
		return ""
	}
	return u
}

// revocationURL is RevocationURL, or BaseURL + DefaultRevocationPath, or
// the token URL with DefaultTokenPath replaced by DefaultRevocationPath;
// empty if none of these applies.
func (c Config) revocationURL() string {
	if c.RevocationURL != "" {
		return c.RevocationURL
	}
	if c.BaseURL != "" {
		u, err := url.JoinPath(c.BaseURL, DefaultRevocationPath)
		if err != nil {
			return ""
		}
		return u
	}
	if t := c.tokenURL(); strings.HasSuffix(t, DefaultTokenPath) {
		return strings.TrimSuffix(t, DefaultTokenPath) + DefaultRevocationPath
	}
	return ""
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// validate reports every problem at once and returns c with its defaults.
func (c Config) validate() (Config, error) {
	var errs []error
	if c.tokenURL() == "" {
		errs = append(errs, errors.New("partnerclient: BaseURL or TokenURL is required"))
	} else if !absoluteHTTP(c.tokenURL()) {
		errs = append(errs, errors.New("partnerclient: the token URL must be an absolute http(s) URL"))
	}
	if c.RevocationURL != "" && !absoluteHTTP(c.RevocationURL) {
		errs = append(errs, errors.New("partnerclient: RevocationURL must be an absolute http(s) URL"))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("partnerclient: ClientID is required"))
	}
	switch {
	case c.PrivateKey != nil:
		if c.ClientSecret != "" {
			errs = append(errs, errors.New("partnerclient: set ClientSecret or PrivateKey, not both"))
		}
		if c.AuthStyle == AuthForm {
			errs = append(errs, errors.New("partnerclient: AuthForm sends a ClientSecret, not a PrivateKey"))
		}
		if c.KeyID == "" {
			errs = append(errs, errors.New("partnerclient: KeyID is required with PrivateKey"))
		}
		if c.Algorithm == "" {
			c.Algorithm = defaultAlgorithm(c.PrivateKey.Public())
		}
		if err := checkAlgorithm(c.Algorithm, c.PrivateKey.Public()); err != nil {
			errs = append(errs, err)
		}
		if c.AssertionAudience == "" {
			c.AssertionAudience = c.tokenURL()
		}
	case c.AuthStyle == AuthPrivateKeyJWT:
		errs = append(errs, errors.New("partnerclient: AuthPrivateKeyJWT needs PrivateKey"))
	case c.AuthStyle == AuthTLSClient && c.Certificate == nil:
		errs = append(errs, errors.New("partnerclient: AuthTLSClient needs Certificate"))
	case c.ClientSecret == "" && c.Certificate != nil:
		c.AuthStyle = AuthTLSClient
	case c.ClientSecret == "":
		errs = append(errs, errors.New("partnerclient: ClientSecret (or PrivateKey) is required"))
	}
	if c.AuthStyle != AuthBasic && c.AuthStyle != AuthForm && c.AuthStyle != AuthPrivateKeyJWT && c.AuthStyle != AuthTLSClient {
		errs = append(errs, errors.New("partnerclient: unknown AuthStyle"))
	}
	if err := c.checkDPoP(); err != nil {
		errs = append(errs, err)
	}
	if c.RenewBefore < 0 || c.MaxWait < 0 || c.BaseDelay < 0 || c.MaxDelay < 0 {
		errs = append(errs, errors.New("partnerclient: durations must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	c.TokenURL = c.tokenURL()
	c.RevocationURL = c.revocationURL()
	if c.PrivateKey != nil {
		c.AuthStyle = AuthPrivateKeyJWT
	}
	if c.RenewBefore == 0 {
		c.RenewBefore = DefaultRenewBefore
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.HTTPClient == nil && c.Certificate != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{Certificates: []tls.Certificate{*c.Certificate}, MinVersion: tls.VersionTLS12}
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Logger == nil {
		c.Logger = slog.New(discardHandler{})
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	if c.Jitter == nil {
		c.Jitter = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d + 1)
		}
	}
	return c, nil
}

// discardHandler drops every record: slog.DiscardHandler is Go 1.24, newer
// than the module's go directive.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
