package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// expect is what an answer must be: its status, its exact body (or, for
// answers that carry fresh values such as a token, a check), and headers
// ("" means the header must be absent).
type expect struct {
	status  int
	body    string
	check   func(testing.TB, reply)
	headers map[string]string
}

// row is one hostile request. It is delivered twice: over the wire to the
// real server (production's net/http settings) and straight to the edge
// handler, bypassing net/http. Both must give want, except for rows that
// net/http itself refuses on the wire (netHTTP): for those, the handler
// must still give direct, so that the application does not rely on net/http
// for its safety.
type row struct {
	name    string
	build   func() *http.Request // a fresh request per delivery
	raw     func() []byte        // when set, the wire bytes instead of build
	want    expect
	netHTTP bool
	direct  *expect
}

// Answers of the token service (exact bodies, as it writes them).
var (
	oauthJSON = map[string]string{
		"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", "Pragma": "no-cache",
	}
	basicChallenge = `Basic realm="partner-api", charset="UTF-8"`
)

func oauthErr(status int, code, desc string, extra ...string) expect {
	body, _ := json.Marshal(map[string]string{"error": code, "error_description": desc})
	h := map[string]string{"WWW-Authenticate": ""}
	for k, v := range oauthJSON {
		h[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return expect{status: status, body: string(body), headers: h}
}

func invalidRequest(desc string) expect {
	return oauthErr(http.StatusBadRequest, "invalid_request", desc)
}

var (
	errBodyTooLarge  = invalidRequest("request body is larger than 64 KiB")
	errContentType   = invalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")
	errNotUTF8       = invalidRequest("parameters must be valid UTF-8 without NUL characters")
	errMalformedForm = invalidRequest("malformed form body")
	errNotObject     = invalidRequest("body must be form fields or a JSON object of string values")
	errTooManyParams = invalidRequest("request has more than 16 parameters")
	errBasic         = invalidRequest("malformed HTTP Basic credentials")
	errTwoMethods    = invalidRequest("use one client authentication method: HTTP Basic or client_id and client_secret in the body, not both")
	errNoGrant       = invalidRequest("grant_type is required")
	errNoTokenParam  = invalidRequest("token is required")
	errGrantType     = oauthErr(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be client_credentials")
	errScope         = oauthErr(http.StatusBadRequest, "invalid_scope", "The requested scope is not held by the client, unknown or malformed")
	// invalid_client challenges with Basic unless the client used form fields.
	errClientBasic = oauthErr(http.StatusUnauthorized, "invalid_client", "Client authentication failed", "WWW-Authenticate", basicChallenge)
	errClientForm  = oauthErr(http.StatusUnauthorized, "invalid_client", "Client authentication failed")
	inactive       = expect{status: http.StatusOK, body: `{"active":false}`, headers: oauthJSON}
)

func repeated(name string) expect {
	return invalidRequest(fmt.Sprintf("parameter %q is repeated", name))
}

func notString(name string) expect {
	return invalidRequest(fmt.Sprintf("value of %q must be a string", name))
}

// Answers of the resource server ({"detail"}).
func detail(status int, text string, headers map[string]string) expect {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the servers write JSON without HTML escaping
	_ = enc.Encode(map[string]string{"detail": text})
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	h := map[string]string{"Content-Type": "application/json; charset=utf-8"}
	for k, v := range headers {
		h[k] = v
	}
	return expect{status: status, body: string(body), headers: h}
}

var (
	meNoToken = detail(http.StatusUnauthorized, "authentication required: send Authorization: Bearer <ACCESS_TOKEN>",
		map[string]string{"WWW-Authenticate": `Bearer realm="api"`, "Cache-Control": "no-store"})
	meInvalid = detail(http.StatusUnauthorized, "invalid, expired or revoked access token",
		map[string]string{"WWW-Authenticate": `Bearer realm="api", error="invalid_token"`, "Cache-Control": "no-store"})
	meBadRequest = detail(http.StatusBadRequest, "malformed request: send the access token once, in the Authorization header only",
		map[string]string{"WWW-Authenticate": `Bearer realm="api", error="invalid_request"`, "Cache-Control": "no-store"})
	notFound = detail(http.StatusNotFound, "not found", nil)
)

func methodNotAllowed(allow string) expect {
	return detail(http.StatusMethodNotAllowed, "method not allowed", map[string]string{"Allow": allow})
}

// The token service's 404 and 405, in the OAuth error format (RFC 6749
// section 5.2) like every error on its paths.
func tokenMisrouted(status int, desc string, extra ...string) expect {
	return oauthErr(status, "invalid_request", desc, extra...)
}

var tokenNotFound = tokenMisrouted(http.StatusNotFound,
	"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server")

func tokenMethodNotAllowed(allow string) expect {
	return tokenMisrouted(http.StatusMethodNotAllowed, "this endpoint takes "+strings.ReplaceAll(allow, ", ", " or ")+" only", "Allow", allow)
}

// netHTTPErr is an answer net/http writes itself, before any handler.
func netHTTPErr(status int, text string) expect {
	return expect{status: status, body: text, headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}}
}

// table is the hostile table's world: the stack, its clients and tokens.
type table struct {
	s      *stack
	forger *forger

	hosp, hospSecret       string // hospital: every scope
	pharma, pharmaSecret   string // pharma: programme.metrics.read events.subscribe
	bare, bareSecret       string // psp_partner: no scope
	revoked, revokedSecret string
	rotated, oldSecret     string // rotated once: oldSecret is dead
	newSecret              string
	hospToken, pharmaToken string
	rotatedToken           string // issued before the rotation
	revokedToken           string // issued before the revocation
	crafted                []craftedToken
}

func newTable(t testing.TB) *table {
	t.Helper()
	s := newStack(t)
	tb := &table{s: s, forger: newForger(t, s)}
	ctx := context.Background()
	tb.hosp, tb.hospSecret = s.client(clients.AudienceHospital, clients.AllScopes...)
	tb.pharma, tb.pharmaSecret = s.client(clients.AudiencePharma, clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe)
	tb.bare, tb.bareSecret = s.client(clients.AudiencePSPPartner)
	tb.revoked, tb.revokedSecret = s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tb.rotated, tb.oldSecret = s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	tb.hospToken = s.token(tb.hosp, "programme.metrics.read events.subscribe patients.read referrals.write", 1)
	tb.pharmaToken = s.token(tb.pharma, "events.subscribe", 1)
	tb.revokedToken = s.token(tb.revoked, "events.subscribe", 1)
	tb.rotatedToken = s.token(tb.rotated, "patients.read", 1)
	if _, err := s.store.Revoke(ctx, tb.revoked); err != nil {
		t.Fatal(err)
	}
	_, newSecret, err := s.store.RotateSecret(ctx, tb.rotated)
	if err != nil {
		t.Fatal(err)
	}
	tb.newSecret = newSecret
	tb.crafted = tb.forger.craftedTokens(t, tb.hospToken, tb.hosp, 1, s.tokenNow)
	return tb
}

// req is a request description turned into a builder.
func (tb *table) req(method, path, contentType string, body func() io.Reader, mods ...func(*http.Request)) func() *http.Request {
	return func() *http.Request {
		var b io.Reader
		if body != nil {
			b = body()
		}
		req, err := http.NewRequest(method, "http://"+tb.s.addr+path, b)
		if err != nil {
			panic(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for _, m := range mods {
			m(req)
		}
		return req
	}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

// chunked hides the body's length, so it is sent chunked.
func chunked(s string) func() io.Reader {
	return func() io.Reader { return struct{ io.Reader }{strings.NewReader(s)} }
}

func (tb *table) token(contentType, body string, mods ...func(*http.Request)) func() *http.Request {
	return tb.req(http.MethodPost, pathToken, contentType, text(body), mods...)
}

func (tb *table) me(mods ...func(*http.Request)) func() *http.Request {
	return tb.req(http.MethodGet, pathMe, "", nil, mods...)
}

// tokenOK checks a 200 token answer: the exact body of a verifiable token
// of client id with scope.
func (tb *table) tokenOK(id, scope string) expect {
	return expect{status: http.StatusOK, headers: oauthJSON, check: func(t testing.TB, r reply) {
		t.Helper()
		tok := accessToken(t, r)
		want, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
		if !bytes.Equal(r.Body, want) {
			t.Errorf("token body %s, want %s", r.Body, want)
		}
		c, err := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: tb.s.keys.Public()}, issuer, audience,
			func() time.Time { return tb.s.tokenNow }).Verify(tok)
		if err != nil || c.ClientID != id || c.Scope != scope {
			t.Errorf("token of %+v (%v), want client %s scope %q", c, err, id, scope)
		}
	}}
}

// meOK checks a 200 client description of client id.
func meOK(id string) expect {
	return expect{status: http.StatusOK, headers: map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"},
		check: func(t testing.TB, r reply) {
			t.Helper()
			if m := r.json(t); m["client_id"] != id || m["api_version"] != "1" {
				t.Errorf("/me answered %s, want client %s", r.Body, id)
			}
		}}
}

// activeFor checks a 200 introspection answer for an active token of id.
func activeFor(id string) expect {
	return expect{status: http.StatusOK, headers: oauthJSON, check: func(t testing.TB, r reply) {
		t.Helper()
		if m := r.json(t); m["active"] != true || m["client_id"] != id {
			t.Errorf("introspection %s, want active for %s", r.Body, id)
		}
	}}
}

// rows builds the whole table.
func (tb *table) rows() []row {
	var rows []row
	add := func(name string, build func() *http.Request, want expect) {
		rows = append(rows, row{name: name, build: build, want: want})
	}
	hosp := basic(tb.hosp, tb.hospSecret)
	const all = "programme.metrics.read events.subscribe patients.read referrals.write"

	// --- Token endpoint: content types --------------------------------------
	for _, tc := range []struct {
		ct, body string
		want     expect
	}{
		{"", grant, errContentType},
		{"text/plain", grant, errContentType},
		{"text/html; charset=utf-8", grant, errContentType},
		{"application/xml", "<grant_type>client_credentials</grant_type>", errContentType},
		{"application/jsonp", `{"grant_type":"client_credentials"}`, errContentType},
		{"application/json-patch+json", `{"grant_type":"client_credentials"}`, errContentType},
		{"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\nclient_credentials\r\n--x--\r\n", errContentType},
		{"application/octet-stream", grant, errContentType},
		{"x-www-form-urlencoded", grant, errContentType},
		{"application/x-www-form-urlencoded;;", grant, errContentType},
		{"application/x-www-form-urlencoded; charset", grant, errContentType},
		{"application/x-www-form-urlencoded, application/json", grant, errContentType},
		{";", grant, errContentType},
		{"*/*", grant, errContentType},
		{formType, grant, tb.tokenOK(tb.hosp, all)},
		{formType + "; charset=utf-8", grant, tb.tokenOK(tb.hosp, all)},
		{"APPLICATION/X-WWW-FORM-URLENCODED; Charset=UTF-8", grant, tb.tokenOK(tb.hosp, all)},
		{formType + "; charset=iso-8859-1", grant, tb.tokenOK(tb.hosp, all)},
		{jsonType, `{"grant_type":"client_credentials"}`, tb.tokenOK(tb.hosp, all)},
		{jsonType + "; charset=utf-8", `{"grant_type":"client_credentials"}`, tb.tokenOK(tb.hosp, all)},
		{jsonType, grant, errNotObject},
		{formType, `{"grant_type":"client_credentials"}`, errNoGrant},
	} {
		add("content type "+tc.ct+" with "+short(tc.body), tb.token(tc.ct, tc.body, hosp), tc.want)
	}
	add("two Content-Type headers, form first", tb.token(formType, grant, hosp, header("Content-Type", jsonType)), tb.tokenOK(tb.hosp, all))
	add("two Content-Type headers, JSON first", tb.token(jsonType, grant, hosp, header("Content-Type", formType)), errNotObject)

	// --- Token endpoint: body size -------------------------------------------
	const cap = tokenserver.MaxBodyBytes
	pad := func(n int) string { // a form body of exactly n bytes
		b := grant + "&pad="
		return b + strings.Repeat("a", n-len(b))
	}
	add("body of exactly 64 KiB", tb.token(formType, pad(cap), hosp), tb.tokenOK(tb.hosp, all))
	add("body of 64 KiB + 1", tb.token(formType, pad(cap+1), hosp), errBodyTooLarge)
	add("chunked body of 64 KiB", tb.req(http.MethodPost, pathToken, formType, chunked(pad(cap)), hosp), tb.tokenOK(tb.hosp, all))
	add("chunked body of 64 KiB + 1", tb.req(http.MethodPost, pathToken, formType, chunked(pad(cap+1)), hosp), errBodyTooLarge)
	add("body of 1 MiB", tb.token(formType, pad(1<<20), hosp), errBodyTooLarge)
	add("chunked body of 1 MiB", tb.req(http.MethodPost, pathToken, formType, chunked(pad(1<<20)), hosp), errBodyTooLarge)
	add("JSON body over the cap", tb.token(jsonType, `{"grant_type":"client_credentials","pad":"`+strings.Repeat("a", cap)+`"}`, hosp), errBodyTooLarge)
	add("body over the cap, no credentials", tb.token(formType, pad(cap+100)), errBodyTooLarge)
	add("body over the cap, wrong content type", tb.token("text/plain", pad(cap+100), hosp), errBodyTooLarge)
	add("15 unknown parameters", tb.token(formType, grant+manyParams(15), hosp), tb.tokenOK(tb.hosp, all))
	add("16 unknown parameters", tb.token(formType, grant+manyParams(16), hosp), errTooManyParams)
	add("4000 unknown parameters", tb.token(formType, grant+manyParams(4000), hosp), errTooManyParams)
	add("scope of 60000 spaces", tb.token(formType, grant+"&scope="+strings.Repeat("+", 60000), hosp), tb.tokenOK(tb.hosp, all))

	// --- Token endpoint: form syntax ------------------------------------------
	for _, tc := range []struct {
		name, body string
		want       expect
	}{
		{"empty body", "", errNoGrant},
		{"only ampersands", "&&&", errNoGrant},
		{"ampersands around", "&&" + grant + "&&", tb.tokenOK(tb.hosp, all)},
		{"empty grant_type", "grant_type=", errNoGrant},
		{"grant_type without =", "grant_type", errNoGrant},
		{"percent-encoded name and value", "grant%5Ftype=client%5Fcredentials", tb.tokenOK(tb.hosp, all)},
		{"bad percent escape in value", "grant_type=client_credentials&scope=%zz", errMalformedForm},
		{"bad percent escape in name", "%zz=1&" + grant, errMalformedForm},
		{"truncated percent escape", grant + "&scope=%", errMalformedForm},
		{"empty name", "=x&" + grant, errMalformedForm},
		{"semicolon separator", "grant_type=client_credentials;scope=x", errGrantType},
		{"repeated grant_type", grant + "&" + grant, repeated("grant_type")},
		{"repeated grant_type, second empty", grant + "&grant_type=", repeated("grant_type")},
		{"repeated scope", grant + "&scope=events.subscribe&scope=patients.read", repeated("scope")},
		{"repeated unknown parameter", grant + "&x=1&x=2", repeated("x")},
		{"name repeated by percent-encoding", grant + "&grant%5Ftype=client_credentials", repeated("grant_type")},
		{"invalid UTF-8 value", grant + "&scope=%FF%FE", errNotUTF8},
		{"invalid UTF-8 name", "%C3%28=1&" + grant, errNotUTF8},
		{"raw invalid UTF-8 byte", grant + "&x=\xff", errNotUTF8},
		{"overlong UTF-8 encoding of /", grant + "&x=%C0%AF", errNotUTF8},
		{"UTF-16 surrogate in UTF-8", grant + "&x=%ED%A0%80", errNotUTF8},
		{"NUL in value", grant + "&scope=events.subscribe%00", errNotUTF8},
		{"NUL in name", "grant_type%00=client_credentials", errNotUTF8},
		{"raw NUL byte", grant + "&x=\x00", errNotUTF8},
		{"NUL in grant_type", "grant_type=client_credentials%00", errNotUTF8},
		{"plus signs as spaces in grant_type", "grant_type=client+credentials", errGrantType},
	} {
		add("form: "+tc.name, tb.token(formType, tc.body, hosp), tc.want)
	}

	// --- Token endpoint: JSON syntax -----------------------------------------
	for _, tc := range []struct {
		name, body string
		want       expect
	}{
		{"empty object", `{}`, errNoGrant},
		{"array", `["client_credentials"]`, errNotObject},
		{"string", `"grant_type=client_credentials"`, errNotObject},
		{"number", `1`, errNotObject},
		{"null", `null`, errNotObject},
		{"empty body", ``, errNotObject},
		{"whitespace only", " \n\t", errNotObject},
		{"truncated", `{"grant_type":`, errNotObject},
		{"trailing comma", `{"grant_type":"client_credentials",}`, errNotObject},
		{"trailing garbage", `{"grant_type":"client_credentials"} x`, errNotObject},
		{"two objects", `{"grant_type":"client_credentials"}{"scope":"x"}`, errNotObject},
		{"byte order mark", "\ufeff" + `{"grant_type":"client_credentials"}`, errNotObject},
		{"single quotes", `{'grant_type':'client_credentials'}`, errNotObject},
		{"comment", `{"grant_type":"client_credentials" /* x */}`, errNotObject},
		{"value null (absent)", `{"grant_type":null}`, errNoGrant},
		{"optional value null (absent)", `{"grant_type":"client_credentials","scope":null}`, tb.tokenOK(tb.hosp, all)},
		{"unknown members of every type", `{"grant_type":"client_credentials","request_id":42,"a":{"b":[true,null]},"c":[],"d":false,"e":null}`, tb.tokenOK(tb.hosp, all)},
		{"duplicate unknown member", `{"grant_type":"client_credentials","a":1,"a":2}`, repeated("a")},
		// A grant_type that is not a string is not client_credentials
		// (issue 59, hole 13); other members must be strings.
		{"value number", `{"grant_type":1}`, errGrantType},
		{"value true", `{"grant_type":true}`, errGrantType},
		{"value array", `{"grant_type":["client_credentials"]}`, errGrantType},
		{"value object", `{"grant_type":{"a":"b"}}`, errGrantType},
		{"deeply nested unknown value", `{"grant_type":"client_credentials","x":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`, tb.tokenOK(tb.hosp, all)},
		{"deeply nested known value", `{"scope":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`, notString("scope")},
		{"number overflow", `{"grant_type":1e999}`, errGrantType},
		{"number overflow in scope", `{"grant_type":"client_credentials","scope":1e999}`, errNotObject},
		{"duplicate grant_type", `{"grant_type":"client_credentials","grant_type":"client_credentials"}`, repeated("grant_type")},
		{"duplicate scope", `{"grant_type":"client_credentials","scope":"a","scope":"b"}`, repeated("scope")},
		{"duplicate by escape", `{"grant_type":"client_credentials","grant\u005ftype":"client_credentials"}`, repeated("grant_type")},
		{"escaped value", `{"grant_type":"client\u005fcredentials"}`, tb.tokenOK(tb.hosp, all)},
		{"NUL escape in value", `{"grant_type":"client_credentials","scope":"\u0000"}`, errNotUTF8},
		{"NUL escape in name", `{"grant_type":"client_credentials","\u0000":"x"}`, errNotUTF8},
		{"raw NUL in string", "{\"grant_type\":\"client_credentials\x00\"}", errNotObject},
		{"raw newline in string", "{\"grant_type\":\"client_credentials\n\"}", errNotObject},
		{"lone surrogate escape", `{"grant_type":"client_credentials","x":"\ud800"}`, tb.tokenOK(tb.hosp, all)},
		{"invalid UTF-8 in a name (decoded as U+FFFD)", "{\"grant_type\":\"client_credentials\",\"\xff\":\"x\"}", tb.tokenOK(tb.hosp, all)},
		{"invalid UTF-8 in scope (decoded as U+FFFD)", "{\"grant_type\":\"client_credentials\",\"scope\":\"\xff\"}", errScope},
		{"grant_type with trailing space", `{"grant_type":"client_credentials "}`, errGrantType},
	} {
		add("json: "+tc.name, tb.token(jsonType, tc.body, hosp), tc.want)
	}

	// --- Token endpoint: grant types (checked before the client) ------------
	for _, gt := range []string{
		"password", "authorization_code", "refresh_token", "implicit", "CLIENT_CREDENTIALS", "Client_Credentials",
		"client_credentials ", " client_credentials", "client_credentials\t", "client-credentials",
		"urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange",
		"client_credentials,password", "ｃlient_credentials", "сlient_credentials",
	} {
		add("grant_type "+fmt.Sprintf("%q", gt)+" with good credentials", tb.token(formType, form("grant_type", gt), hosp), errGrantType)
		add("grant_type "+fmt.Sprintf("%q", gt)+" without credentials", tb.token(formType, form("grant_type", gt)), errGrantType)
	}
	add("password grant with username and password", tb.token(formType, form("grant_type", "password", "username", "a", "password", "b"), hosp), errGrantType)
	add("grant_type only in the query string", tb.req(http.MethodPost, pathToken+"?grant_type=client_credentials", formType, text(""), hosp), errNoGrant)
	add("credentials only in the query string", tb.req(http.MethodPost, pathToken+"?client_id="+tb.hosp+"&client_secret="+tb.hospSecret, formType, text(grant)), errClientBasic)

	// --- Token endpoint: scopes ----------------------------------------------
	scope := func(name, sc string, want expect) {
		add("scope "+name, tb.token(formType, form("grant_type", "client_credentials", "scope", sc), hosp), want)
	}
	scope("empty", "", tb.tokenOK(tb.hosp, all))
	scope("one space", " ", tb.tokenOK(tb.hosp, all))
	scope("one", "events.subscribe", tb.tokenOK(tb.hosp, "events.subscribe"))
	scope("two in catalogue order", "events.subscribe patients.read", tb.tokenOK(tb.hosp, "events.subscribe patients.read"))
	scope("two in reverse order", "patients.read events.subscribe", tb.tokenOK(tb.hosp, "events.subscribe patients.read"))
	scope("repeated", "events.subscribe events.subscribe", tb.tokenOK(tb.hosp, "events.subscribe"))
	scope("double space", "events.subscribe  patients.read", tb.tokenOK(tb.hosp, "events.subscribe patients.read"))
	scope("leading and trailing spaces", "  events.subscribe  ", tb.tokenOK(tb.hosp, "events.subscribe"))
	scope("16 entries", strings.TrimSpace(strings.Repeat("events.subscribe ", 16)), tb.tokenOK(tb.hosp, "events.subscribe"))
	scope("17 entries", strings.TrimSpace(strings.Repeat("events.subscribe ", 17)), errScope)
	scope("3000 entries", strings.TrimSpace(strings.Repeat("events.subscribe ", 3000)), errScope)
	scope("10000 one-letter entries", strings.TrimSpace(strings.Repeat("a ", 10000)), errScope)
	for _, tc := range []struct{ name, sc string }{
		{"with a tab", "events.subscribe\tpatients.read"},
		{"ending in a tab", "events.subscribe\t"},
		{"with a newline", "events.subscribe\npatients.read"},
		{"with CR LF", "events.subscribe\r\npatients.read"},
		{"with a vertical tab", "events.subscribe\vpatients.read"},
		{"with a form feed", "events.subscribe\fpatients.read"},
		{"with NBSP", "events.subscribe\u00a0patients.read"},
		{"with an ideographic space", "events.subscribe\u3000patients.read"},
		{"with a zero-width space", "events.subscribe\u200b"},
		{"with a zero-width joiner", "events\u200d.subscribe"},
		{"with a right-to-left override", "\u202eevents.subscribe"},
		{"Cyrillic e look-alike", "\u0435vents.subscribe"},
		{"Greek omicron look-alike", "pr\u03bfgramme.metrics.read"},
		{"fullwidth letters", "\uff45\uff56\uff45\uff4e\uff54\uff53.subscribe"},
		{"dotless i", "patients.read\u0131"},
		{"combining accent", "events.subscribe\u0301"},
		{"upper case", "EVENTS.SUBSCRIBE"},
		{"unknown", "admin"},
		{"wildcard", "events.*"},
		{"quoted", `"events.subscribe"`},
		{"backslash", `events.subscribe\`},
		{"comma separated", "events.subscribe,patients.read"},
		{"plus separated (decoded once)", "events.subscribe+patients.read"},
		{"known and unknown", "events.subscribe admin"},
		{"URL of a scope", "https://partner-api/events.subscribe"},
		{"very long token", strings.Repeat("x", 50000)},
	} {
		scope(tc.name, tc.sc, errScope)
	}
	add("pharma asks for patients.read", tb.token(formType, form("grant_type", "client_credentials", "scope", "patients.read"), basic(tb.pharma, tb.pharmaSecret)), errScope)
	add("pharma asks for nothing", tb.token(formType, grant, basic(tb.pharma, tb.pharmaSecret)), tb.tokenOK(tb.pharma, "programme.metrics.read events.subscribe"))
	add("client without scopes asks for nothing", tb.token(formType, grant, basic(tb.bare, tb.bareSecret)), tb.tokenOK(tb.bare, ""))
	add("client without scopes asks for one", tb.token(formType, form("grant_type", "client_credentials", "scope", "events.subscribe"), basic(tb.bare, tb.bareSecret)), errScope)
	add("bad scope with a wrong secret answers invalid_client", tb.token(formType, form("grant_type", "client_credentials", "scope", "admin\t"), basic(tb.hosp, "svc_cs_wrong")), errClientBasic)
	add("bad scope of an unknown client answers invalid_client", tb.token(formType, form("grant_type", "client_credentials", "scope", "patients.read"), basic(clients.NewClientID(), "svc_cs_x")), errClientBasic)
	add("JSON scope with a tab", tb.token(jsonType, `{"grant_type":"client_credentials","scope":"events.subscribe\tpatients.read"}`, hosp), errScope)

	// --- Token endpoint: client authentication ------------------------------
	basic64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	auth := func(v string) func(*http.Request) { return header("Authorization", v) }
	for _, tc := range []struct {
		name string
		mods []func(*http.Request)
		want expect
	}{
		{"Basic with no colon", mods(auth("Basic " + basic64(tb.hosp))), errBasic},
		{"Basic with bad base64", mods(auth("Basic !!!not-base64!!!")), errBasic},
		{"Basic with base64url alphabet", mods(auth("Basic " + base64.URLEncoding.EncodeToString([]byte("\xfb\xff:\xfe")))), errBasic},
		{"Basic without base64 padding", mods(auth("Basic " + strings.TrimRight(basic64(tb.hosp+":"+tb.hospSecret+"x"), "="))), errBasic},
		{"Basic with embedded space", mods(auth("Basic " + basic64(tb.hosp)[:8] + " " + basic64(tb.hosp)[8:])), errBasic},
		{"Basic scheme only", mods(auth("Basic")), errBasic},
		{"Basic with bad percent escape", mods(basicRaw("%zz:" + tb.hospSecret)), errBasic},
		{"Basic with invalid UTF-8", mods(basicRaw("%FF%FE:" + tb.hospSecret)), errBasic},
		{"Basic with raw invalid UTF-8", mods(basicRaw("\xff:\xfe")), errBasic},
		{"two Authorization headers", mods(hosp, hosp), invalidRequest("Authorization header is repeated")},
		{"Basic and client_secret", mods(hosp), errTwoMethods}, // body below
		{"Basic of empty id and secret", mods(basicRaw(":")), errClientBasic},
		{"Basic with NUL in the id", mods(basicRaw(tb.hosp + "%00:" + url.QueryEscape(tb.hospSecret))), errClientBasic},
		{"Basic with raw NUL in the id", mods(basicRaw(tb.hosp + "\x00:" + tb.hospSecret)), errClientBasic},
		{"Basic with id and secret swapped", mods(basic(tb.hospSecret, tb.hosp)), errClientBasic},
		{"Basic with the secret as id and password", mods(basic(tb.hospSecret, tb.hospSecret)), errClientBasic},
		{"Basic with a 10000-character id", mods(basic(strings.Repeat("svc_", 2500), tb.hospSecret)), errClientBasic},
		{"Basic with an upper-case id", mods(basic(strings.ToUpper(tb.hosp), tb.hospSecret)), errClientBasic},
		{"Basic with a wrong secret", mods(basic(tb.hosp, tb.hospSecret+"x")), errClientBasic},
		{"Basic with the secret's last character changed", mods(basic(tb.hosp, flip(tb.hospSecret))), errClientBasic},
		{"Basic with an empty secret", mods(basic(tb.hosp, "")), errClientBasic},
		{"Basic with the secret and a newline", mods(basic(tb.hosp, tb.hospSecret+"\n")), errClientBasic},
		{"Basic with another client's secret", mods(basic(tb.hosp, tb.pharmaSecret)), errClientBasic},
		{"Basic of an unknown client", mods(basic(clients.NewClientID(), tb.hospSecret)), errClientBasic},
		{"Basic of a revoked client", mods(basic(tb.revoked, tb.revokedSecret)), errClientBasic},
		{"Basic with a rotated-out secret", mods(basic(tb.rotated, tb.oldSecret)), errClientBasic},
		{"Bearer on the token endpoint", mods(bearer(tb.hospToken)), errClientBasic},
		{"Digest on the token endpoint", mods(auth(`Digest username="` + tb.hosp + `"`)), errClientBasic},
		{"no credentials", nil, errClientBasic},
		{"Basic, percent-encoding everything", mods(basicRaw(pctAll(tb.hosp) + ":" + pctAll(tb.hospSecret))), tb.tokenOK(tb.hosp, all)},
		{"basic in lower case", mods(auth("basic " + basic64(tb.hosp+":"+tb.hospSecret))), tb.tokenOK(tb.hosp, all)},
		{"BASIC in upper case, extra spaces", mods(auth("BASIC    " + basic64(tb.hosp+":"+tb.hospSecret))), tb.tokenOK(tb.hosp, all)},
		{"Basic with the new secret after rotation", mods(basic(tb.rotated, tb.newSecret)), tb.tokenOK(tb.rotated, "patients.read")},
	} {
		body := grant
		if tc.name == "Basic and client_secret" {
			body = form("grant_type", "client_credentials", "client_secret", tb.hospSecret)
		}
		add("auth: "+tc.name, tb.token(formType, body, tc.mods...), tc.want)
	}
	for _, tc := range []struct {
		name string
		kv   []string
		mods []func(*http.Request)
		want expect
	}{
		{"form credentials", []string{"client_id", tb.hosp, "client_secret", tb.hospSecret}, nil, tb.tokenOK(tb.hosp, all)},
		{"form id equal to the Basic id", []string{"client_id", tb.hosp}, mods(hosp), tb.tokenOK(tb.hosp, all)},
		{"form id other than the Basic id", []string{"client_id", tb.pharma}, mods(hosp), errTwoMethods},
		{"form secret with Basic", []string{"client_id", tb.hosp, "client_secret", tb.hospSecret}, mods(hosp), errTwoMethods},
		{"form id without secret", []string{"client_id", tb.hosp}, nil, errClientForm},
		{"form secret without id", []string{"client_secret", tb.hospSecret}, nil, errClientForm},
		{"form wrong secret", []string{"client_id", tb.hosp, "client_secret", "svc_cs_wrong"}, nil, errClientForm},
		{"form secret sent as client_id", []string{"client_id", tb.hospSecret, "client_secret", tb.hospSecret}, nil, errClientForm},
		{"form id and secret swapped", []string{"client_id", tb.hospSecret, "client_secret", tb.hosp}, nil, errClientForm},
		{"form unknown client", []string{"client_id", clients.NewClientID(), "client_secret", tb.hospSecret}, nil, errClientForm},
		{"form revoked client", []string{"client_id", tb.revoked, "client_secret", tb.revokedSecret}, nil, errClientForm},
		{"form repeated client_id", []string{"client_id", tb.hosp, "client_id", tb.hosp, "client_secret", tb.hospSecret}, nil, repeated("client_id")},
		{"form repeated client_secret", []string{"client_id", tb.hosp, "client_secret", tb.hospSecret, "client_secret", "x"}, nil, repeated("client_secret")},
		{"form empty id and secret", []string{"client_id", "", "client_secret", ""}, nil, errClientForm},
	} {
		add("auth: "+tc.name, tb.token(formType, form(append([]string{"grant_type", "client_credentials"}, tc.kv...)...), tc.mods...), tc.want)
	}
	add("auth: JSON credentials", tb.token(jsonType, fmt.Sprintf(`{"grant_type":"client_credentials","client_id":%q,"client_secret":%q}`, tb.hosp, tb.hospSecret)), tb.tokenOK(tb.hosp, all))
	add("auth: JSON secret as a number", tb.token(jsonType, fmt.Sprintf(`{"grant_type":"client_credentials","client_id":%q,"client_secret":1}`, tb.hosp)), notString("client_secret"))

	// --- Introspection ---------------------------------------------------------
	intro := func(body string, mods ...func(*http.Request)) func() *http.Request {
		return tb.req(http.MethodPost, pathIntrospect, formType, text(body), mods...)
	}
	add("introspect: own token", intro(form("token", tb.hospToken), hosp), activeFor(tb.hosp))
	add("introspect: token_type_hint refresh_token", intro(form("token", tb.hospToken, "token_type_hint", "refresh_token"), hosp), activeFor(tb.hosp))
	add("introspect: another client's token", intro(form("token", tb.pharmaToken), hosp), inactive)
	add("introspect: revoked client's token", intro(form("token", tb.revokedToken), basic(tb.pharma, tb.pharmaSecret)), inactive)
	add("introspect: rotated-out token by its own client", intro(form("token", tb.rotatedToken), basic(tb.rotated, tb.newSecret)), inactive)
	add("introspect: no token", intro("", hosp), errNoTokenParam)
	add("introspect: empty token", intro(form("token", ""), hosp), inactive)
	add("introspect: repeated token", intro(form("token", tb.hospToken, "token", tb.hospToken), hosp), repeated("token"))
	add("introspect: no credentials", intro(form("token", tb.hospToken)), errClientBasic)
	add("introspect: wrong secret", intro(form("token", tb.hospToken), basic(tb.hosp, "svc_cs_wrong")), errClientBasic)
	add("introspect: the token as credentials", intro(form("token", tb.hospToken), bearer(tb.hospToken)), errClientBasic)
	add("introspect: body over the cap", intro(form("token", strings.Repeat("a", cap)), hosp), errBodyTooLarge)
	add("introspect: token with NUL", intro(form("token", tb.hospToken+"\x00"), hosp), errNotUTF8)
	add("introspect: JSON token", tb.req(http.MethodPost, pathIntrospect, jsonType, text(`{"token":"`+tb.hospToken+`"}`), hosp), activeFor(tb.hosp))

	// --- Crafted tokens: at /me (two spellings of the scheme) and introspection.
	for _, ct := range tb.crafted {
		add("token "+ct.name+" at /me", tb.me(bearer(ct.token)), meInvalid)
		add("token "+ct.name+" at /me, lower-case scheme", tb.me(header("Authorization", "bearer "+ct.token)), meInvalid)
		add("token "+ct.name+" introspected", intro(form("token", ct.token), hosp), inactive)
	}
	for _, tc := range []struct{ name, token string }{
		{"revoked client's", tb.revokedToken},
		{"rotated-out", tb.rotatedToken},
	} {
		add("token "+tc.name+" at /me", tb.me(bearer(tc.token)), meInvalid)
	}

	// --- /me: the Authorization header and the query ---------------------------
	add("me: real token", tb.me(bearer(tb.hospToken)), meOK(tb.hosp))
	for _, tc := range []struct {
		name string
		mods []func(*http.Request)
		want expect
	}{
		{"no Authorization", nil, meNoToken},
		{"Basic credentials", mods(hosp), meNoToken},
		{"token without a scheme", mods(auth(tb.hospToken)), meNoToken},
		{"scheme Token", mods(auth("Token " + tb.hospToken)), meNoToken},
		{"Bearer after a tab", mods(auth("Bearer\t" + tb.hospToken)), meNoToken},
		{"Bearer with a colon", mods(auth("Bearer: " + tb.hospToken)), meNoToken},
		{"Bearer only", mods(auth("Bearer")), meInvalid},
		{"Bearer and spaces", mods(auth("Bearer     ")), meInvalid},
		{"Bearer and two tokens", mods(auth("Bearer " + tb.hospToken + " " + tb.hospToken)), meInvalid},
		{"Bearer and a comma", mods(auth("Bearer " + tb.hospToken + ",")), meInvalid},
		{"Bearer in quotes", mods(auth(`Bearer "` + tb.hospToken + `"`)), meInvalid},
		{"Bearer with invalid UTF-8", mods(auth("Bearer " + tb.hospToken + "\xff")), meInvalid},
		{"Bearer with unicode", mods(auth("Bearer svc_at_\u0430\u0431\u0432")), meInvalid},
		{"Bearer of 5000 characters", mods(bearer(strings.Repeat("A", 5000))), meInvalid},
		{"Bearer of 20 KiB (under the header cap)", mods(bearer(strings.Repeat("A", 20<<10))), meInvalid},
		{"Bearer with a client secret", mods(bearer(tb.hospSecret)), meInvalid},
		{"two Authorization headers", mods(bearer(tb.hospToken), bearer(tb.hospToken)), meBadRequest},
		{"Bearer and Basic headers", mods(bearer(tb.hospToken), hosp), meBadRequest},
		{"bearer in lower case", mods(auth("bearer " + tb.hospToken)), meOK(tb.hosp)},
		{"BEARER with three spaces", mods(auth("BEARER   " + tb.hospToken)), meOK(tb.hosp)},
	} {
		add("me: "+tc.name, tb.me(tc.mods...), tc.want)
	}
	add("me: access_token in the query", tb.req(http.MethodGet, pathMe+"?access_token="+tb.hospToken, "", nil), meBadRequest)
	add("me: access_token in the query and the header", tb.req(http.MethodGet, pathMe+"?access_token="+tb.hospToken, "", nil, bearer(tb.hospToken)), meBadRequest)
	add("me: empty access_token in the query", tb.req(http.MethodGet, pathMe+"?access_token=", "", nil, bearer(tb.hospToken)), meBadRequest)
	add("me: malformed query naming access_token", tb.req(http.MethodGet, pathMe+"?access_token%zz", "", nil, bearer(tb.hospToken)), meBadRequest)
	add("me: access_token in a JSON body", tb.req(http.MethodGet, pathMe, jsonType, text(`{"access_token":"`+tb.hospToken+`"}`)), meNoToken)
	add("me: token in a form body", tb.req(http.MethodGet, pathMe, formType, text(form("access_token", tb.hospToken))), meNoToken)
	add("me: 1 MiB body ignored", tb.req(http.MethodGet, pathMe, formType, text(strings.Repeat("a", 1<<20)), bearer(tb.hospToken)), meOK(tb.hosp))

	// --- Methods and paths -------------------------------------------------------
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "PROPFIND"} {
		add(m+" on the token endpoint", tb.req(m, pathToken, formType, text(grant), hosp), tokenMethodNotAllowed("POST"))
		add(m+" on introspection", tb.req(m, pathIntrospect, formType, text(grant), hosp), tokenMethodNotAllowed("POST"))
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		add(m+" on /me", tb.req(m, pathMe, formType, text(grant), bearer(tb.hospToken)), methodNotAllowed("GET, HEAD"))
	}
	add("POST on the JWKS", tb.req(http.MethodPost, tokenserver.PathJWKS, formType, text(grant)), tokenMethodNotAllowed("GET, HEAD"))
	add("POST /api/v1/oauth/token", tb.req(http.MethodPost, "/api/v1/oauth/token", formType, text(grant), hosp),
		tokenMisrouted(http.StatusNotFound, "no endpoint at this path: the path ends with a slash, POST /api/v1/oauth/token/"))
	for _, p := range []string{
		"/api/v1/oauth/token/x", "/api/v1/oauth/TOKEN/", "/api/v1/oauth/", "/api/v1/oauth//token/",
		"/api/v1/oauth/token/%2e%2e/", "/api/v1/oauth/../me/", "/.well-known/../api/v1/me/", "/.well-known/jwks.json/",
	} {
		add("POST "+p, tb.req(http.MethodPost, p, formType, text(grant), hosp), tokenNotFound)
	}
	// Only the slash missing: the path to call (issue 59 point 14).
	add("GET /api/v1/me", tb.req(http.MethodGet, "/api/v1/me", "", nil, bearer(tb.hospToken)),
		detail(http.StatusNotFound, "no endpoint at this path: the path ends with a slash, GET /api/v1/me/", nil))
	for _, p := range []string{"/api/v1/me/x", "/api/v1/ME/", "/api/v1//me/", "/api/v2/me/", "/api/v1/me/%00", "/api/v1/me/..%2f"} {
		add("GET "+p, tb.req(http.MethodGet, p, "", nil, bearer(tb.hospToken)), notFound)
	}

	// --- Headers and framing that net/http refuses before any handler ----------
	ptk := pathToken
	rawReq := func(head string, body string) func() []byte {
		return func() []byte { return []byte(head + "\r\n" + body) }
	}
	host := "Host: " + tb.s.addr + "\r\n"
	basicHdr := "Authorization: Basic " + basic64(tb.hosp+":"+tb.hospSecret) + "\r\n"
	huge := strings.Repeat("a", 2*httpserver.MaxHeaderBytes) // production's cap, twice
	wireRows := []struct {
		name   string
		raw    func() []byte
		build  func() *http.Request
		want   expect
		direct *expect
	}{
		{"header of 64 KiB (twice the cap)", nil, tb.token(formType, grant, hosp, header("X-Padding", huge)),
			netHTTPErr(http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"), ptr(tb.tokenOK(tb.hosp, all))},
		{"Authorization of 64 KiB", nil, tb.me(bearer(huge)),
			netHTTPErr(http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"), &meInvalid},
		{"500 headers of 100 bytes", nil, tb.me(bearer(tb.hospToken), manyHeaders(500, 100)),
			netHTTPErr(http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"), ptr(meOK(tb.hosp))},
		{"request target of 64 KiB", nil, tb.req(http.MethodGet, pathMe+"?q="+huge, "", nil, bearer(tb.hospToken)),
			netHTTPErr(http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"), ptr(meOK(tb.hosp))},
		{"NUL in the Authorization value", nil, tb.me(header("Authorization", "Bearer "+tb.hospToken+"\x00")),
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), &meInvalid},
		{"NUL in the Content-Type value", nil, tb.token(formType+"\x00", grant, hosp),
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), &errContentType},
		{"control character in the Basic value", nil, tb.token(formType, grant, header("Authorization", "Basic \x01"+basic64(tb.hosp+":"+tb.hospSecret))),
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), &errBasic},
		{"header name with a space", rawReq("POST "+ptk+" HTTP/1.1\r\n"+host+"Bad Header: x\r\nContent-Length: 0\r\n", ""), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request: invalid header name"), nil},
		{"header line without a colon", rawReq("POST "+ptk+" HTTP/1.1\r\n"+host+"NoColon\r\nContent-Length: 0\r\n", ""), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), nil},
		{"no Host header", rawReq("POST "+ptk+" HTTP/1.1\r\nContent-Length: 0\r\n", ""), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request: missing required Host header"), nil},
		{"two different Content-Length", rawReq("POST "+ptk+" HTTP/1.1\r\n"+host+basicHdr+"Content-Type: "+formType+"\r\nContent-Length: 29\r\nContent-Length: 10\r\n", grant), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), nil},
		{"negative Content-Length", rawReq("POST "+ptk+" HTTP/1.1\r\n"+host+"Content-Length: -1\r\n", ""), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), nil},
		{"garbage request line", rawReq("\x00\x01\x02 / HTTP/1.1\r\n"+host, ""), nil,
			netHTTPErr(http.StatusBadRequest, "400 Bad Request"), nil},
	}
	for _, w := range wireRows {
		rows = append(rows, row{name: "wire: " + w.name, raw: w.raw, build: w.build, want: w.want, netHTTP: true, direct: w.direct})
	}
	return rows
}

func ptr(e expect) *expect { return &e }

func mods(m ...func(*http.Request)) []func(*http.Request) { return m }

func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "&p%d=%d", i, i)
	}
	return b.String()
}

func manyHeaders(n, size int) func(*http.Request) {
	return func(r *http.Request) {
		for i := range n {
			r.Header.Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("f", size))
		}
	}
}

// pctAll percent-encodes every byte (a client that encodes more than it
// must; RFC 6749 section 2.3.1 has the server decode it).
func pctAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// TestHostileInput (point 4) sends every row of the hostile table over the
// wire and straight to the handler and compares status, body and headers.
// Every row runs in a fresh rate-limit window and from an address of its
// own, so no limit answers for another row.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	tb := newTable(t)
	rows := tb.rows()
	if len(rows) < 300 {
		t.Fatalf("the table has %d rows; it is meant to have several hundred", len(rows))
	}
	statuses := map[string]int{}
	sent := 0
	for i, r := range rows {
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		t.Run(r.name, func(t *testing.T) {
			tb.s.rate.Add(time.Minute + time.Second)
			var wire reply
			var err error
			if r.raw != nil {
				wire, err = tb.s.wire(r.raw())
			} else {
				req := r.build()
				if req.Header.Get("X-Forwarded-For") == "" {
					req.Header.Set("X-Forwarded-For", addr)
				}
				wire, err = tb.s.wireRequest(req)
			}
			sent++
			if err != nil {
				t.Fatalf("over the wire: %v", err)
			}
			statuses[fmt.Sprintf("wire %d", wire.Status)]++
			check(t, "over the wire", wire, r.want)
			if r.build == nil {
				return
			}
			want := r.want
			if r.netHTTP {
				want = *r.direct
			}
			req := r.build()
			if req.Header.Get("X-Forwarded-For") == "" {
				req.Header.Set("X-Forwarded-For", addr)
			}
			direct := tb.s.direct(req)
			sent++
			statuses[fmt.Sprintf("direct %d", direct.Status)]++
			check(t, "to the handler", direct, want)
		})
	}
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&summary, " %s: %d;", k, statuses[k])
	}
	t.Logf("hostile table: %d rows, %d requests sent; answers by status:%s", len(rows), sent, summary.String())
	if strings.Contains(tb.s.authLogs.String(), `"panic"`) || strings.Contains(tb.s.resLogs.String(), "panic") {
		t.Errorf("a handler panicked:\n%s\n%s", tb.s.authLogs, tb.s.resLogs)
	}
}

// check compares an answer with what it must be.
func check(t *testing.T, how string, got reply, want expect) {
	t.Helper()
	if got.Status != want.status {
		t.Errorf("%s: status %d, want %d; body %s", how, got.Status, want.status, short(string(got.Body)))
		return
	}
	if want.check != nil {
		want.check(t, got)
	} else if string(got.Body) != want.body {
		t.Errorf("%s: body\n got %s\nwant %s", how, got.Body, want.body)
	}
	for k, v := range want.headers {
		vals := got.Header.Values(k)
		switch {
		case v == "" && len(vals) > 0:
			t.Errorf("%s: header %s: %q, want none", how, k, vals)
		case v != "" && (len(vals) != 1 || vals[0] != v):
			t.Errorf("%s: header %s: %q, want %q", how, k, vals, v)
		}
	}
	if got.Status >= 500 {
		t.Errorf("%s: a server error", how)
	}
}
