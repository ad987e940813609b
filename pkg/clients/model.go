package clients

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Audiences: the kinds of partner
// (resourceserver/apidocs/guides/scopes-and-audiences.md, Audiences).
const (
	AudiencePharma     = "pharma"
	AudienceHospital   = "hospital"
	AudiencePSPPartner = "psp_partner"
)

// Environments of an organisation.
const (
	EnvironmentSandbox = "sandbox"
	EnvironmentLive    = "live"
)

// Client statuses.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
)

// Scopes (resourceserver/apidocs/guides/scopes-and-audiences.md, Scopes).
const (
	ScopeProgrammeMetricsRead = "programme.metrics.read"
	ScopeEventsSubscribe      = "events.subscribe"
	ScopePatientsRead         = "patients.read"
	ScopeReferralsWrite       = "referrals.write"
)

// Defaults (resourceserver/apidocs/guides/rate-limits.md, Limits).
const (
	DefaultRateLimitPerMinute      = 120
	DefaultTokenRateLimitPerMinute = 30
	MaxRateLimitPerMinute          = 100_000_000
)

// AllScopes lists every scope, in the order of the table in
// resourceserver/apidocs/guides/scopes-and-audiences.md.
var AllScopes = []string{ScopeProgrammeMetricsRead, ScopeEventsSubscribe, ScopePatientsRead, ScopeReferralsWrite}

// patientScopes are granted to hospital clients only
// (resourceserver/apidocs/guides/scopes-and-audiences.md, rule 1 under Rules).
var patientScopes = []string{ScopePatientsRead, ScopeReferralsWrite}

// Audiences lists every partner audience
// (resourceserver/apidocs/guides/scopes-and-audiences.md, Audiences).
var Audiences = []string{AudiencePharma, AudienceHospital, AudiencePSPPartner}

// Scopes of the admin API (deploy/docs/operator-guide.md), held only by operator
// clients: admin.read reads the registry, admin.write changes it.
const (
	ScopeAdminRead  = "admin.read"
	ScopeAdminWrite = "admin.write"
)

// AdminScopes lists the admin API's scopes.
var AdminScopes = []string{ScopeAdminRead, ScopeAdminWrite}

// scopeCatalogue is every scope a client can hold, in the order of the
// stored bit set: the partner scopes (AllScopes, bits 0-3), then the admin
// scopes (bits 4-5).
var scopeCatalogue = slices.Concat(AllScopes, AdminScopes)

// AudienceOperator is the audience of operator clients: the callers of the
// admin API, never partners. They belong to the operator organisation,
// hold admin scopes only, and the partner API refuses their tokens.
const AudienceOperator = "operator"

// OperatorOrgSlug is the organisation of every operator client, created by
// the first `authserver operators create`; no partner organisation may take
// its slug.
const OperatorOrgSlug = "operators"

// Errors of the registry. Callers compare with errors.Is.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
	ErrRevoked     = errors.New("client is revoked")
	ErrInvalid     = errors.New("invalid input")
	ErrUnavailable = errors.New("registry unavailable")
	// ErrConflict: the change does not fit the client's state (a third
	// secret, retiring the only one, a secret change for a client that
	// authenticates with keys).
	ErrConflict = errors.New("conflict")
	// ErrNotReplicated: the change was written on the primary, but fewer
	// replicas than required acknowledged it in time, so a failover may
	// still undo it. The change is not reported as done.
	ErrNotReplicated = errors.New("no replica confirmed the change")
)

// Org is an organisation.
type Org struct {
	Slug        string
	Name        string
	Environment string
	CreatedAt   time.Time
}

// Client is a client's record, without its secret digest. It is a
// storage type: the admin API and the CLI show it in their own wire form
// (authserver/operations: Client).
type Client struct {
	ID                      string
	Name                    string
	Audience                string
	OrgSlug                 string
	OrgName                 string
	Environment             string
	Scopes                  []string
	RateLimitPerMinute      int64
	TokenRateLimitPerMinute int64
	Status                  string
	Generation              int64
	CreatedAt               time.Time
	UpdatedAt               time.Time
	RotatedAt               *time.Time
	RevokedAt               *time.Time
	// AuthMethod is how the client authenticates: AuthClientSecret (HTTP
	// Basic or form parameters), AuthPrivateKeyJWT, or a mutual-TLS method
	// (AuthTLSClient, AuthSelfSignedTLSClient; RFC 8705 section 2).
	AuthMethod string
	// TLSSubject is the certificate name a tls_client_auth client
	// registered (RFC 8705 section 2.1.2); nil for every other method.
	TLSSubject *TLSSubject
	// Secrets are the ids of the secrets the client holds (one or two;
	// none for private_key_jwt), oldest first.
	Secrets []SecretInfo
	// KeysVersion counts the client's key sets (private_key_jwt,
	// self_signed_tls_client_auth) or TLS subjects: 1 at
	// creation, one more with each rotate-keys.
	KeysVersion int64
	// JWKSURI is where the client's public keys are fetched, when they are
	// not registered (private_key_jwt).
	JWKSURI string
	// DPoPBound is the client metadata dpop_bound_access_tokens (RFC 9449
	// section 5.2): the token endpoint issues it DPoP-bound tokens only,
	// and refuses a token request without a DPoP proof.
	DPoPBound bool
}

// SecretInfo names one of a client's secrets (never the secret).
type SecretInfo struct {
	ID        int64
	CreatedAt time.Time
}

// Client authentication methods (RFC 7591 section 2 names the last; a
// secret client may send its secret by HTTP Basic or form parameters).
const (
	AuthClientSecret  = "client_secret"
	AuthPrivateKeyJWT = "private_key_jwt"
)

// OrgSpec is what an operator gives to create an organisation.
type OrgSpec struct {
	Slug        string
	Name        string
	Environment string
}

var slugRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate reports every problem of the organisation spec s at once.
func (s OrgSpec) Validate() error {
	var problems []string
	if !slugRE.MatchString(s.Slug) {
		problems = append(problems, fmt.Sprintf("slug %q: use 1-63 lower-case letters, digits and inner hyphens", s.Slug))
	}
	if s.Slug == OperatorOrgSlug {
		problems = append(problems, fmt.Sprintf("slug %q: reserved for the operator organisation ('authserver operators create' makes it)", s.Slug))
	}
	problems = append(problems, NameProblems(s.Name)...)
	if s.Environment != EnvironmentSandbox && s.Environment != EnvironmentLive {
		problems = append(problems, fmt.Sprintf("environment %q: must be %s or %s", s.Environment, EnvironmentSandbox, EnvironmentLive))
	}
	return Invalid(problems...)
}

// NameProblems is the one rule for every name an operator gives (an
// organisation's, a client's, an operator client's), at the admin API and
// the CLI alike: 1-200 bytes of UTF-8, not only spaces, and no character
// that would act on the terminal or the page that shows it (issue 27
// point 7): no C0 or C1 control (newline, CR, ESC of an ANSI sequence,
// BEL, DEL ...), no bidirectional embedding, override or isolate (U+202A-
// U+202E, U+2066-U+2069) nor mark (U+200E, U+200F, U+061C), no line or
// paragraph separator (U+2028, U+2029), and not only characters that show
// nothing (visible; issue 59 point 14: a name of U+200B alone). Names
// stored before this rule are escaped where the CLI prints them.
func NameProblems(name string) []string {
	var problems []string
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		problems = append(problems, "name: 1-200 characters required")
	}
	if !utf8.ValidString(name) {
		return append(problems, "name: not valid UTF-8")
	}
	if strings.TrimSpace(name) != "" && !strings.ContainsFunc(name, visible) {
		problems = append(problems, "name: only invisible characters (spaces, format characters such as U+200B, U+FEFF or U+00AD, marks, fillers): a name needs a character that shows")
	}
	for i, r := range name {
		if unsafeInText(r) {
			problems = append(problems, fmt.Sprintf("name: character %U at byte %d: control and bidirectional formatting characters are not allowed", r, i))
			break
		}
	}
	return problems
}

// visible reports a character that shows something by itself: a letter,
// digit, punctuation or symbol (Unicode categories L, N, P, S), not a
// space, a format character (Cf: U+200B ZERO WIDTH SPACE, U+FEFF, U+00AD
// SOFT HYPHEN ...), a combining mark alone, nor a filler that Unicode
// makes a letter or symbol but renders as blank (the Hangul fillers,
// default-ignorable, and U+2800 BRAILLE PATTERN BLANK).
func visible(r rune) bool {
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800:
		return false
	}
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S)
}

// unsafeInText reports a character that changes how the text around it is
// shown rather than showing itself: a control character, or one that
// reorders or breaks text (Unicode Bidirectional Algorithm, UAX #9).
func unsafeInText(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069,
		r == 0x200E, r == 0x200F, r == 0x061C, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// ClientSpec is what an operator gives to create a client.
type ClientSpec struct {
	OrgSlug            string
	Name               string
	Audience           string
	Scopes             []string
	RateLimitPerMinute int64 // 0: the default
	// AuthMethod is how the client authenticates, one of AuthMethods; ""
	// is AuthPrivateKeyJWT when Keys is set, else AuthClientSecret.
	AuthMethod string
	// Keys, when set, are the public keys of a private_key_jwt client (RFC
	// 7523 section 2.2) or a self_signed_tls_client_auth client (RFC 8705
	// section 2.2): it has no secret.
	Keys *ClientKeySource
	// TLSSubject is the certificate name of a tls_client_auth client (RFC
	// 8705 section 2.1.2): it has no secret.
	TLSSubject *TLSSubject
	// DPoPBound makes a client that gets DPoP-bound tokens only
	// (Client.DPoPBound).
	DPoPBound bool
}

// Validate reports every problem of the client spec s at once, scope rules
// included.
func (s ClientSpec) Validate() error {
	var problems []string
	if !slugRE.MatchString(s.OrgSlug) {
		problems = append(problems, fmt.Sprintf("organisation %q: not a valid slug", s.OrgSlug))
	}
	problems = append(problems, NameProblems(s.Name)...)
	switch {
	case s.Audience == AudienceOperator && s.OrgSlug != OperatorOrgSlug:
		problems = append(problems, fmt.Sprintf("audience %q: operator clients belong to the %s organisation ('authserver operators create')", s.Audience, OperatorOrgSlug))
	case s.Audience != AudienceOperator && s.OrgSlug == OperatorOrgSlug:
		problems = append(problems, fmt.Sprintf("organisation %q holds operator clients only ('authserver operators create')", s.OrgSlug))
	case s.Audience != AudienceOperator && !slices.Contains(Audiences, s.Audience):
		problems = append(problems, fmt.Sprintf("audience %q: must be one of %s", s.Audience, strings.Join(Audiences, ", ")))
	}
	problems = append(problems, scopeProblems(s.Audience, s.Scopes)...)
	problems = append(problems, s.methodProblems()...)
	if s.RateLimitPerMinute < 0 || s.RateLimitPerMinute > MaxRateLimitPerMinute {
		problems = append(problems, fmt.Sprintf("rate limit %d: must be 1-%d", s.RateLimitPerMinute, MaxRateLimitPerMinute))
	}
	return Invalid(problems...)
}

// Method is the spec's authentication method: AuthMethod, or when it is
// empty AuthPrivateKeyJWT with Keys and AuthClientSecret without.
func (s ClientSpec) Method() string {
	switch {
	case s.AuthMethod != "":
		return s.AuthMethod
	case s.Keys != nil:
		return AuthPrivateKeyJWT
	}
	return AuthClientSecret
}

// methodProblems checks the authentication method and what it needs:
// keys for private_key_jwt and self_signed_tls_client_auth, exactly one
// subject for tls_client_auth (RFC 8705 section 2.1.2), nothing for a
// secret; operator clients use a secret.
func (s ClientSpec) methodProblems() []string {
	var problems []string
	m := s.Method()
	if !slices.Contains(AuthMethods, m) {
		return []string{fmt.Sprintf("auth_method %q: must be one of %s", m, strings.Join(AuthMethods, ", "))}
	}
	if s.Audience == AudienceOperator && m != AuthClientSecret {
		problems = append(problems, "operator clients authenticate with a secret")
	}
	keyed := m == AuthPrivateKeyJWT || m == AuthSelfSignedTLSClient
	switch {
	case keyed && s.Keys == nil:
		problems = append(problems, fmt.Sprintf("keys: a %s client needs a JWK set or a jwks_uri", m))
	case keyed:
		if p := s.Keys.problem(); p != "" {
			problems = append(problems, p)
		}
	case s.Keys != nil:
		problems = append(problems, fmt.Sprintf("keys (jwks, jwks_uri): only for %s and %s, not %s", AuthPrivateKeyJWT, AuthSelfSignedTLSClient, m))
	}
	switch {
	case m == AuthTLSClient && s.TLSSubject == nil:
		problems = append(problems, fmt.Sprintf("a %s client needs exactly one of %s (RFC 8705 section 2.1.2)", AuthTLSClient, strings.Join(SubjectKinds, ", ")))
	case m == AuthTLSClient:
		problems = append(problems, s.TLSSubject.problems()...)
	case s.TLSSubject != nil:
		problems = append(problems, fmt.Sprintf("%s: only for %s, not %s", s.TLSSubject.Kind, AuthTLSClient, m))
	}
	return problems
}

// scopeProblems enforces the scope rules: known scopes only, no repeats,
// and patient-level scopes for hospital clients only
// (resourceserver/apidocs/guides/scopes-and-audiences.md, rule 1 under Rules).
func scopeProblems(audience string, scopes []string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, sc := range scopes {
		switch {
		case audience == AudienceOperator && !slices.Contains(AdminScopes, sc):
			problems = append(problems, fmt.Sprintf("scope %q: operator clients hold admin scopes only (%s)", sc, strings.Join(AdminScopes, ", ")))
		case audience != AudienceOperator && slices.Contains(AdminScopes, sc):
			problems = append(problems, fmt.Sprintf("scope %q: admin scopes are for operator clients only ('authserver operators create')", sc))
		case !slices.Contains(scopeCatalogue, sc):
			problems = append(problems, fmt.Sprintf("scope %q: unknown (known: %s)", sc, strings.Join(AllScopes, ", ")))
		case seen[sc]:
			problems = append(problems, fmt.Sprintf("scope %q: given twice", sc))
		case slices.Contains(patientScopes, sc) && audience != AudienceHospital:
			problems = append(problems, fmt.Sprintf("scope %q: patient-level scopes are for hospital clients only, never %s", sc, audience))
		}
		seen[sc] = true
	}
	return problems
}

// ParseScopes splits a space-separated scope list (RFC 6749 section 3.3).
func ParseScopes(s string) []string {
	return strings.Fields(s)
}
