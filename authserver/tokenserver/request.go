package tokenserver

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// MaxBodyBytes caps a token or introspection request body.
const MaxBodyBytes = 64 << 10

// MaxParams caps the parameters (form fields or JSON keys) of a token or
// introspection request. The grammar needs at most five (grant_type, scope,
// client_id, client_secret; token on introspection); a body of thousands of
// fields costs milliseconds to decode and is refused, unparsed, once the
// count passes the cap.
const MaxParams = 16

// errTooManyParams refuses a body of more than MaxParams parameters. Like
// every invalid_request, it counts against its address's ceiling of
// failures (see refuse).
var errTooManyParams = invalidRequest("request has more than 16 parameters")

// oauthError is an error answered in the OAuth format (RFC 6749 section
// 5.2): its code, description and status are what the client sees.
type oauthError struct {
	Status      int
	Code        string
	Description string
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

func invalidRequest(desc string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: desc}
}

// credentials are how the client authenticated.
type credentials struct {
	ID     string
	Secret string
	// Basic is true when they came in the Authorization header.
	Basic bool
	// Assertion is a JWT client assertion (private_key_jwt, RFC 7523
	// section 2.2) presented instead of a secret; ID is then its "sub".
	Assertion string
	// Certificate: the client authenticates with its connection's client
	// certificate (mutual TLS, RFC 8705 section 2; mtls.go), having sent
	// its client_id alone.
	Certificate bool
	// Present is false when the request carried no client authentication.
	Present bool
}

// clientRequest is a parsed token or introspection request.
type clientRequest struct {
	Params url.Values
	Client credentials
	// Proof is a token request's DPoP proof as checked (proof.go), nil
	// without a DPoP header; ProofErr is the refusal of one that did not
	// verify (a *dpop.Error), answered only once the client authenticated.
	Proof    *clients.ProofCheck
	ProofErr error
	// proofIn is what the proof is verified against; proofDeferred says it
	// was not verified yet (deferProof): Proof then stands as refused.
	proofIn       dpop.Input
	proofDeferred bool
	// cert is the client certificate of the request's connection (nil:
	// none) and chain the rest the client sent (mtls.go): what a token is
	// bound to, and a certificate client's credential.
	cert  *x509.Certificate
	chain []*x509.Certificate
}

// parseClientRequest reads a POST body that is form-encoded or a JSON
// object (see parseJSONObject), at most MaxBodyBytes, each parameter once (RFC 6749
// section 3.2), and the client's credentials. Query-string parameters are
// ignored: they are never credentials (RFC 6749 section 2.3.1). token
// marks the token endpoint's request, whose grant_type may be of any JSON
// type (parseJSONObject).
func parseClientRequest(r *http.Request, token bool) (*clientRequest, error) {
	params, err := parseBody(r, token)
	if err != nil {
		return nil, err
	}
	creds, err := parseCredentials(r.Header.Values("Authorization"), params)
	if err != nil {
		return nil, err
	}
	return &clientRequest{Params: params, Client: creds}, nil
}

// errBodyTooLarge refuses a body over MaxBodyBytes. It is answered with
// Connection: close: net/http would otherwise read up to 256 KiB more of an
// unread body, and wait for a client that stalls, before sending the answer.
var errBodyTooLarge = invalidRequest("request body is larger than 64 KiB")

func parseBody(r *http.Request, token bool) (url.Values, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, errBodyTooLarge
	}
	mt := r.Header.Get("Content-Type")
	if mt != formType { // what nearly every client sends, as written: nothing to parse
		var err error
		if mt, _, err = mime.ParseMediaType(mt); err != nil {
			return nil, invalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")
		}
	}
	body, err := readBody(r)
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return nil, errBodyTooLarge
	}
	if err != nil {
		return nil, invalidRequest("request body could not be read")
	}
	var params url.Values
	switch mt {
	case formType:
		if countFormFields(body, MaxParams+1) > MaxParams {
			return nil, errTooManyParams
		}
		params, err = parseForm(body)
	case "application/json":
		params, err = parseJSONObject(body, token)
	default:
		return nil, invalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")
	}
	if err != nil {
		return nil, err
	}
	for k, vs := range params {
		if !cleanText(k) || !cleanText(vs[0]) {
			return nil, errNotText
		}
	}
	return params, nil
}

// formType is the form's media type (RFC 6749 section 4.4.2).
const formType = "application/x-www-form-urlencoded"

// readBody reads r's body, which the base layer (httpserver.Base) caps at
// MaxBodyBytes. A declared length (checked against the cap above) sizes
// the buffer once; io.ReadAll starts at 512 bytes and, past them, reads
// into further chunks that it then copies into one, which an introspection
// request (about 600 bytes with its token) always meets.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 {
		return io.ReadAll(r.Body)
	}
	// bytes.MinRead to spare: ReadFrom asks for that much room before each
	// read, the last one (which meets EOF) included.
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+bytes.MinRead))
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

// errNotText refuses a parameter name or value that is not valid UTF-8 or
// holds a NUL character.
var errNotText = invalidRequest("parameters must be valid UTF-8 without NUL characters")

// cleanText reports whether s is valid UTF-8 without NUL characters.
func cleanText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// countFormFields counts the non-empty "&"-separated pairs of a form body,
// stopping at max: a scan with bytes.IndexByte, before any decoding.
func countFormFields(body []byte, max int) int {
	n := 0
	for len(body) > 0 && n < max {
		i := bytes.IndexByte(body, '&')
		if i < 0 {
			return n + 1
		}
		if i > 0 {
			n++
		}
		body = body[i+1:]
	}
	return n
}

// parseForm decodes application/x-www-form-urlencoded strictly: a malformed
// pair or a repeated parameter is an error, not silently dropped.
func parseForm(body []byte) (url.Values, error) {
	params := url.Values{}
	for pair := range strings.SplitSeq(string(body), "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || key == "" {
			return nil, invalidRequest("malformed form body")
		}
		if params.Has(key) {
			return nil, invalidRequest("parameter " + quote(key) + " is repeated")
		}
		params.Set(key, val)
	}
	return params, nil
}

// knownParams are the parameters the token, introspection and revocation
// endpoints read: in a JSON body their values must be strings (or null).
var knownParams = map[string]bool{
	"grant_type": true, "scope": true, "client_id": true, "client_secret": true,
	"client_assertion": true, "client_assertion_type": true, "token": true, "token_type_hint": true,
}

// parseJSONObject decodes a JSON object (RFC 8259 section 4), refusing
// repeated members and anything after the object. A known parameter's value
// must be a string, or null, which means the parameter is absent; unknown
// members, of any JSON type, are ignored, as unknown form fields are (RFC
// 6749 section 3.2: "parameters sent without a value MUST be treated as if
// they were omitted", and unrecognized ones ignored). Every member counts
// towards MaxParams: the decoder reads one member at a time and stops at
// the one past the cap, so the rest of a body of thousands of members is
// never decoded.
//
// On the token endpoint (token), a grant_type that is not a string (123,
// true, ["client_credentials"], an object) is a grant type that is not
// client_credentials, answered unsupported_grant_type as any other (the
// partner API's error table; RFC 6749 section 5.2), not invalid_request:
// it is read as notAString.
func parseJSONObject(body []byte, token bool) (url.Values, error) {
	bad := invalidRequest("body must be form fields or a JSON object of string values")
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, bad
	}
	params := url.Values{}
	seen := make(map[string]bool, 8)
	for dec.More() {
		if len(seen) == MaxParams {
			return nil, errTooManyParams
		}
		kt, err := dec.Token()
		if err != nil {
			return nil, bad
		}
		key, _ := kt.(string)
		if seen[key] {
			return nil, invalidRequest("parameter " + quote(key) + " is repeated")
		}
		seen[key] = true
		if !knownParams[key] {
			// Skipped whole, whatever its type (the decoder still checks
			// that it is well-formed JSON); its name, and its value if a
			// string, are checked as an unknown form field's are.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, bad
			}
			var str string
			if !cleanText(key) || (skip[0] == '"' && json.Unmarshal(skip, &str) == nil && !cleanText(str)) {
				return nil, errNotText
			}
			continue
		}
		if token && key == "grant_type" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, bad
			}
			var v *string
			switch {
			case json.Unmarshal(raw, &v) != nil:
				params.Set(key, notAString)
			case v != nil: // null: absent
				params.Set(key, *v)
			}
			continue
		}
		vt, err := dec.Token()
		if err != nil {
			return nil, bad
		}
		switch v := vt.(type) {
		case string:
			params.Set(key, v)
		case nil: // null: absent
		default:
			return nil, invalidRequest("value of " + quote(key) + " must be a string")
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, bad
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bad
	}
	return params, nil
}

// notAString is the grant_type of a JSON body whose grant_type is not a
// string: no grant type's name (it has spaces), so it is answered as an
// unsupported one.
const notAString = "(not a string)"

// parseCredentials reads client authentication: HTTP Basic (RFC 6749
// section 2.3.1, RFC 7617) with id and secret form-urlencoded before base64,
// or the client_id and client_secret parameters. Using both methods is an
// error (RFC 6749 section 2.3); a body client_id equal to the Basic id is
// tolerated, as some clients send it.
func parseCredentials(auth []string, params url.Values) (credentials, error) {
	if params.Has("client_assertion") || params.Has("client_assertion_type") {
		return parseAssertion(auth, params)
	}
	formID, formSecret := params.Get("client_id"), params.Get("client_secret")
	hasForm := params.Has("client_id") || params.Has("client_secret")
	if len(auth) > 1 {
		return credentials{}, invalidRequest("Authorization header is repeated")
	}
	if len(auth) == 0 {
		if !hasForm {
			return credentials{}, nil
		}
		return credentials{ID: formID, Secret: formSecret, Present: true}, nil
	}
	scheme, payload, _ := strings.Cut(auth[0], " ")
	if !strings.EqualFold(scheme, "Basic") {
		return credentials{}, errUnsupportedAuth
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return credentials{}, invalidRequest("malformed HTTP Basic credentials")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return credentials{}, invalidRequest("malformed HTTP Basic credentials")
	}
	id, err1 := url.QueryUnescape(user)
	secret, err2 := url.QueryUnescape(pass)
	if err1 != nil || err2 != nil || !utf8.ValidString(id) || !utf8.ValidString(secret) {
		return credentials{}, invalidRequest("malformed HTTP Basic credentials")
	}
	if params.Has("client_secret") || (params.Has("client_id") && formID != id) {
		return credentials{}, invalidRequest("use one client authentication method: HTTP Basic or client_id and client_secret in the body, not both")
	}
	return credentials{ID: id, Secret: secret, Basic: true, Present: true}, nil
}

// parseAssertion reads client authentication by a JWT assertion (RFC 7521
// section 4.2, RFC 7523 section 2.2): client_assertion_type must be the
// JWT bearer type and client_assertion present; client_id, if sent, must
// name the assertion's subject. Combined with a secret (Basic or
// client_secret), it is an error (RFC 6749 section 2.3). An assertion whose
// subject is not a client id is an invalid_client, counted as any.
func parseAssertion(auth []string, params url.Values) (credentials, error) {
	switch {
	case len(auth) > 0 || params.Has("client_secret"):
		return credentials{}, invalidRequest("use one client authentication method: a client assertion or a secret, not both")
	case params.Get("client_assertion_type") == "":
		return credentials{}, invalidRequest("client_assertion_type is required with client_assertion")
	case params.Get("client_assertion") == "":
		return credentials{}, invalidRequest("client_assertion is required with client_assertion_type")
	case params.Get("client_assertion_type") != AssertionType:
		return credentials{}, &oauthError{Status: http.StatusUnauthorized, Code: "invalid_client",
			Description: "client_assertion_type must be " + AssertionType}
	}
	raw := params.Get("client_assertion")
	id, ok := assertionSubject(raw)
	if !ok {
		return credentials{}, errUnknownClient
	}
	if params.Has("client_id") && params.Get("client_id") != id {
		return credentials{}, invalidRequest("client_id does not name the client assertion's subject")
	}
	return credentials{ID: id, Assertion: raw, Present: true}, nil
}

// errUnsupportedAuth: an Authorization scheme other than Basic.
var errUnsupportedAuth = &oauthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "Client authentication failed"}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}
