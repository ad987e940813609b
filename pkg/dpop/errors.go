package dpop

import "strings"

// Error codes of a refused proof (RFC 9449 section 12.2, "OAuth Extensions
// Error Registration"): the "error" of a token endpoint answer (section 5)
// or of a resource server's WWW-Authenticate challenge (section 7.1).
const (
	// CodeInvalidProof: the DPoP proof is missing, malformed or does not
	// verify (sections 5 and 7.1).
	CodeInvalidProof = "invalid_dpop_proof"
	// CodeUseNonce: the server requires a nonce, and the proof carried none
	// or one that is not fresh (section 8 at the authorization server,
	// section 9 at a resource server). The answer carries a DPoP-Nonce
	// header with a fresh one.
	CodeUseNonce = "use_dpop_nonce"
)

// Kind is the class of a refusal: which error code it maps to.
type Kind int

const (
	// InvalidProof maps to CodeInvalidProof.
	InvalidProof Kind = iota + 1
	// UseNonce maps to CodeUseNonce.
	UseNonce
)

// Error is a refused proof. Its Description is one of this package's fixed
// sentences: it never quotes the proof, so it may be sent to the client as
// error_description (RFC 6749 section 5.2) or in a WWW-Authenticate
// challenge.
type Error struct {
	Kind        Kind
	Description string
}

func (e *Error) Error() string { return "dpop: " + e.Code() + ": " + e.Description }

// Code is the OAuth error code of the refusal: CodeInvalidProof or
// CodeUseNonce.
func (e *Error) Code() string {
	if e.Kind == UseNonce {
		return CodeUseNonce
	}
	return CodeInvalidProof
}

// Is makes errors.Is(err, ErrInvalidProof) and errors.Is(err, ErrUseNonce)
// hold for every refusal of that kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Description == "" && t.Kind == e.Kind
}

// Sentinels to test a refusal's kind with errors.Is.
var (
	ErrInvalidProof error = &Error{Kind: InvalidProof}
	ErrUseNonce     error = &Error{Kind: UseNonce}
)

// The refusals. Each check of Verify returns one of these values (compared
// by identity in the tests), so that an answer names what failed without
// echoing anything of the proof.
var (
	errMissing       = invalid("a DPoP header is required")
	errMultiple      = invalid("exactly one DPoP header is allowed")
	errTooLong       = invalid("the DPoP proof is too long")
	errCompact       = invalid("the DPoP proof is not a JWS in compact serialization")
	errHeader        = invalid("the DPoP proof's JOSE header is malformed")
	errTyp           = invalid("the DPoP proof's typ must be dpop+jwt")
	errAlg           = invalid("the DPoP proof's alg is not supported (" + algsList + ")")
	errCrit          = invalid("the DPoP proof's header carries crit or b64, which are not supported")
	errNoJWK         = invalid("the DPoP proof's header carries no jwk")
	errPrivateJWK    = invalid("the DPoP proof's jwk holds private key material")
	errJWK           = invalid("the DPoP proof's jwk is malformed or does not fit its alg")
	errSignature     = invalid("the DPoP proof's signature does not verify with its jwk")
	errClaims        = invalid("the DPoP proof's claims are malformed")
	errJTI           = invalid("the DPoP proof's jti is missing or too long")
	errHTM           = invalid("the DPoP proof's htm does not match the request's method")
	errHTU           = invalid("the DPoP proof's htu does not match the request's URI")
	errIATMissing    = invalid("the DPoP proof's iat is missing")
	errIATOld        = invalid("the DPoP proof's iat is too old")
	errIATFuture     = invalid("the DPoP proof's iat is in the future")
	errATHMissing    = invalid("the DPoP proof's ath is missing")
	errATH           = invalid("the DPoP proof's ath does not match the access token")
	errBinding       = invalid("the DPoP proof's key is not the key the access token is bound to")
	errNonceMissing  = &Error{Kind: UseNonce, Description: "a DPoP nonce is required"}
	errNonceStale    = &Error{Kind: UseNonce, Description: "the DPoP proof's nonce is not fresh"}
	errReplayedProof = invalid("the DPoP proof was used before")
)

func invalid(description string) *Error { return &Error{Kind: InvalidProof, Description: description} }

// ErrReplayed is the refusal of a proof whose jti was used before: the
// caller returns it when the replay mark (see ReplayKey) already existed.
var ErrReplayed error = errReplayedProof

// Challenge is the value of a WWW-Authenticate header answering a request
// to a resource server with the DPoP scheme (RFC 9449 section 7.1): code is
// CodeInvalidProof, CodeUseNonce or an RFC 6750 section 3.1 code such as
// "invalid_token" (empty: no error, as for a request without credentials);
// description is sent as error_description when not empty; algs lists
// Algorithms. The description must not quote client input: pass an
// Error's Description or a fixed text.
func Challenge(code, description string) string {
	var b strings.Builder
	b.WriteString("DPoP")
	sep := " "
	if code != "" {
		b.WriteString(sep + `error="` + quote(code) + `"`)
		sep = ", "
		if description != "" {
			b.WriteString(sep + `error_description="` + quote(description) + `"`)
		}
	}
	b.WriteString(sep + `algs="` + algsList + `"`)
	return b.String()
}

// quote escapes a quoted-string's quote and backslash (RFC 9110 section
// 5.6.4); control characters, which the fixed texts never hold, are
// dropped.
func quote(s string) string {
	if !strings.ContainsAny(s, "\"\\") && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
