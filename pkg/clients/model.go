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

// Scopes of the admin API (README: Admin API), held only by operator
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
	// Basic or form parameters) or AuthPrivateKeyJWT.
	AuthMethod string
	// Secrets are the ids of the secrets the client holds (one or two;
	// none for private_key_jwt), oldest first.
	Secrets []SecretInfo
	// KeysVersion counts the client's key sets (private_key_jwt): 1 at
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
	var errs []error
	if !slugRE.MatchString(s.Slug) {
		errs = append(errs, fmt.Errorf("slug %q: use 1-63 lower-case letters, digits and inner hyphens", s.Slug))
	}
	if s.Slug == OperatorOrgSlug {
		errs = append(errs, fmt.Errorf("slug %q: reserved for the operator organisation ('authserver operators create' makes it)", s.Slug))
	}
	errs = append(errs, NameProblems(s.Name)...)
	if s.Environment != EnvironmentSandbox && s.Environment != EnvironmentLive {
		errs = append(errs, fmt.Errorf("environment %q: must be %s or %s", s.Environment, EnvironmentSandbox, EnvironmentLive))
	}
	return invalid(errs)
}

// NameProblems is the one rule for every name an operator gives (an
// organisation's, a client's, an operator client's), at the admin API and
// the CLI alike: 1-200 bytes of UTF-8, not only spaces, and no character
// that would act on the terminal or the page that shows it (issue 27
// point 7): no C0 or C1 control (newline, CR, ESC of an ANSI sequence,
// BEL, DEL ...), no bidirectional embedding, override or isolate (U+202A-
// U+202E, U+2066-U+2069) nor mark (U+200E, U+200F, U+061C), no line or
// paragraph separator (U+2028, U+2029). Names stored before this rule are
// escaped where the CLI prints them.
func NameProblems(name string) []error {
	var errs []error
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		errs = append(errs, errors.New("name: 1-200 characters required"))
	}
	if !utf8.ValidString(name) {
		return append(errs, errors.New("name: not valid UTF-8"))
	}
	for i, r := range name {
		if unsafeInText(r) {
			errs = append(errs, fmt.Errorf("name: character %U at byte %d: control and bidirectional formatting characters are not allowed", r, i))
			break
		}
	}
	return errs
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
	// Keys, when set, makes a private_key_jwt client (RFC 7523 section
	// 2.2) with these public keys instead of a secret.
	Keys *ClientKeySource
	// DPoPBound makes a client that gets DPoP-bound tokens only
	// (Client.DPoPBound).
	DPoPBound bool
}

// Validate reports every problem of the client spec s at once, scope rules
// included.
func (s ClientSpec) Validate() error {
	var errs []error
	if !slugRE.MatchString(s.OrgSlug) {
		errs = append(errs, fmt.Errorf("organisation %q: not a valid slug", s.OrgSlug))
	}
	errs = append(errs, NameProblems(s.Name)...)
	switch {
	case s.Audience == AudienceOperator && s.OrgSlug != OperatorOrgSlug:
		errs = append(errs, fmt.Errorf("audience %q: operator clients belong to the %s organisation ('authserver operators create')", s.Audience, OperatorOrgSlug))
	case s.Audience != AudienceOperator && s.OrgSlug == OperatorOrgSlug:
		errs = append(errs, fmt.Errorf("organisation %q holds operator clients only ('authserver operators create')", s.OrgSlug))
	case s.Audience != AudienceOperator && !slices.Contains(Audiences, s.Audience):
		errs = append(errs, fmt.Errorf("audience %q: must be one of %s", s.Audience, strings.Join(Audiences, ", ")))
	}
	errs = append(errs, scopeProblems(s.Audience, s.Scopes)...)
	if s.Keys != nil {
		if s.Audience == AudienceOperator {
			errs = append(errs, errors.New("operator clients authenticate with a secret"))
		}
		if err := s.Keys.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.RateLimitPerMinute < 0 || s.RateLimitPerMinute > MaxRateLimitPerMinute {
		errs = append(errs, fmt.Errorf("rate limit %d: must be 1-%d", s.RateLimitPerMinute, MaxRateLimitPerMinute))
	}
	return invalid(errs)
}

// scopeProblems enforces the scope rules: known scopes only, no repeats,
// and patient-level scopes for hospital clients only
// (resourceserver/apidocs/guides/scopes-and-audiences.md, rule 1 under Rules).
func scopeProblems(audience string, scopes []string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, sc := range scopes {
		switch {
		case audience == AudienceOperator && !slices.Contains(AdminScopes, sc):
			errs = append(errs, fmt.Errorf("scope %q: operator clients hold admin scopes only (%s)", sc, strings.Join(AdminScopes, ", ")))
		case audience != AudienceOperator && slices.Contains(AdminScopes, sc):
			errs = append(errs, fmt.Errorf("scope %q: admin scopes are for operator clients only ('authserver operators create')", sc))
		case !slices.Contains(scopeCatalogue, sc):
			errs = append(errs, fmt.Errorf("scope %q: unknown (known: %s)", sc, strings.Join(AllScopes, ", ")))
		case seen[sc]:
			errs = append(errs, fmt.Errorf("scope %q: given twice", sc))
		case slices.Contains(patientScopes, sc) && audience != AudienceHospital:
			errs = append(errs, fmt.Errorf("scope %q: patient-level scopes are for hospital clients only, never %s", sc, audience))
		}
		seen[sc] = true
	}
	return errs
}

// ParseScopes splits a space-separated scope list (RFC 6749 section 3.3).
func ParseScopes(s string) []string {
	return strings.Fields(s)
}

func invalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}
