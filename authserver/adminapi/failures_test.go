package adminapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// wantProblem checks a problem answer exactly: status, code, detail, the
// request id, Retry-After (retryAfter; "" for none) and the problem's
// media type.
func wantProblem(t *testing.T, what string, a answer, status int, code, detail, retryAfter string) {
	t.Helper()
	want := map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": float64(status),
		"detail": detail, "code": code, "request_id": a.Header.Get("X-Request-Id")}
	var got map[string]any
	if err := json.Unmarshal(a.Body, &got); err != nil || a.Status != status || len(got) != len(want) {
		t.Errorf("%s: %d %s, want %d %v", what, a.Status, a.Body, status, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], v)
		}
	}
	if ct, ra := a.Header.Get("Content-Type"), a.Header.Get("Retry-After"); ct != "application/problem+json" || ra != retryAfter ||
		a.Header.Get("Cache-Control") != "no-store" || a.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: Content-Type %q, Retry-After %q (want %q), header %v", what, ct, ra, retryAfter, a.Header)
	}
}

// wantLogged checks that the admin API logged, at error level, the answer
// of the request a with the cause: the request id, the status and words of
// the cause.
func wantLogged(t *testing.T, what string, logs *logtest.Sink, a answer, cause string) {
	t.Helper()
	for _, r := range logs.Records(t) {
		if r["level"] == "ERROR" && r["msg"] == "admin api" && r["request_id"] == a.Header.Get("X-Request-Id") &&
			r["status"] == float64(a.Status) && strings.Contains(r["err"].(string), cause) {
			return
		}
	}
	t.Errorf("%s: no error record of the %d with %q:\n%s", what, a.Status, cause, logs)
}

// TestUnknownErrorIsInternal: an error the admin API does not know (here
// Redis refusing a command on a key that holds another type, a record that
// does not decode) is 500 internal, without Retry-After: retrying will not
// mend it. Its cause is logged with the request id and never answered.
func TestUnknownErrorIsInternal(t *testing.T) {
	logs := &logtest.Sink{}
	s := newStack(t, options{logs: logs})
	op, _, hc := s.operator(false)
	ctx := t.Context()
	// The withdrawn keys and the admin audit stream, each a string.
	for _, key := range []string{"{signing-keys}:withdrawn", "{admin}:audit"} {
		if err := s.rdb.Set(ctx, s.prefix+key, "not a set", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// An idempotency record that is not one (idempotency.go: the key of
	// an operator's Idempotency-Key).
	const idemKey = "6f1d2c58-0f4e-4b7a-9d3e-2b8f1a7c5e90"
	sum := sha256.Sum256([]byte(op.ID + "\x00" + idemKey))
	if err := s.rdb.Set(ctx, s.prefix+"{idem:"+hex.EncodeToString(sum[:16])+"}", "{not json", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, method, path string
		body               any
		header             []string
		cause              string
	}{
		{"withdrawn keys", "GET", "/admin/v1/keys", nil, nil, "WRONGTYPE"},
		{"admin audit", "GET", "/admin/v1/audit", nil, nil, "WRONGTYPE"},
		{"idempotency record", "POST", "/admin/v1/orgs", map[string]any{"slug": "idem", "name": "Idem", "environment": "live"},
			[]string{"Idempotency-Key", idemKey}, "idempotency record: invalid character"},
	} {
		a := s.call(hc, c.method, c.path, c.body, c.header...)
		wantProblem(t, c.what, a, http.StatusInternalServerError, "internal", "internal error", "")
		if strings.Contains(string(a.Body), c.cause) || strings.Contains(string(a.Body), "WRONGTYPE") {
			t.Errorf("%s: the cause is answered: %s", c.what, a.Body)
		}
		wantLogged(t, c.what, logs, a, c.cause)
	}
	if a := s.call(hc, "GET", "/admin/v1/orgs/idem", nil); a.Status != http.StatusNotFound {
		t.Errorf("the refused POST made the organisation: %d %s", a.Status, a.Body)
	}
}

// TestRedisOutageIsUnavailable: with the admin API's Redis stopped (a
// redis-server of the test's own; the operators are admitted through the
// test Redis), a known outage is 503 unavailable with Retry-After: 5,
// whether the registry marked it (clients.IsUnavailable) or it came from a
// Redis call of the admin API's own (the audit stream, idempotency
// records, the withdrawn keys: redisconn.Unreachable). The cause is
// logged, never answered.
func TestRedisOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb, err := redisconn.Open(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	logs := &logtest.Sink{}
	s := newStack(t, options{logs: logs, redis: rdb})
	_, _, hc := s.operator(false)
	if a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "before", "name": "Before", "environment": "live"}); a.Status != http.StatusCreated {
		t.Fatalf("create org before the outage: %d %s", a.Status, a.Body)
	}

	srv.Kill()

	for _, c := range []struct {
		what, method, path string
		body               any
		header             []string
	}{
		{"registry", "GET", "/admin/v1/orgs", nil, nil},
		{"registry write", "POST", "/admin/v1/orgs", map[string]any{"slug": "during", "name": "During", "environment": "live"}, nil},
		{"withdrawn keys", "GET", "/admin/v1/keys", nil, nil},
		{"admin audit", "GET", "/admin/v1/audit", nil, nil},
		{"idempotency record", "POST", "/admin/v1/orgs", map[string]any{"slug": "during", "name": "During", "environment": "live"},
			[]string{"Idempotency-Key", "0b7e3d51-2c4a-4f8e-a1d6-93c5e7f20b48"}},
	} {
		a := s.call(hc, c.method, c.path, c.body, c.header...)
		wantProblem(t, c.what, a, http.StatusServiceUnavailable, "unavailable", "the registry is unavailable; retry after Retry-After seconds", "5")
		if strings.Contains(string(a.Body), "refused") || strings.Contains(string(a.Body), srv.Addr()) {
			t.Errorf("%s: the cause is answered: %s", c.what, a.Body)
		}
		wantLogged(t, c.what, logs, a, "connection refused")
	}
}

// TestRefusalDetails: every kind of refusal is answered with its status,
// its code and, exactly, the detail that says what to fix (each detail as
// the API answered it before refusals carried their own public words,
// clients.Error.Public): the registry's, the operations' and the body
// decoder's.
func TestRefusalDetails(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	id, _ := s.newClient(hc, "refusals")
	revoked, _ := s.newClient(hc, "refusals")
	if a := s.call(hc, "POST", "/admin/v1/clients/"+revoked+"/revoke", nil); a.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", a.Status, a.Body)
	}
	signing, _ := s.call(hc, "GET", "/admin/v1/keys", nil).json(t)["signing_kid"].(string)
	for _, c := range []struct {
		what, method, path string
		body               any
		status             int
		code, detail       string
	}{
		{"unknown organisation", "GET", "/admin/v1/orgs/nope", nil, 404, "not_found", `organisation "nope": not found`},
		{"organisation again", "POST", "/admin/v1/orgs", map[string]any{"slug": "refusals", "name": "R", "environment": "live"}, 409, "exists",
			`organisation "refusals": already exists`},
		{"malformed client id", "GET", "/admin/v1/clients/svc_nope", nil, 404, "not_found", `client "svc_nope": not found`},
		{"unknown secret", "DELETE", "/admin/v1/clients/" + id + "/secrets/x", nil, 404, "not_found", "client " + id + ` has no secret "x": not found`},
		{"secret of another number", "DELETE", "/admin/v1/clients/" + id + "/secrets/7", nil, 404, "not_found", "client " + id + " has no secret 7: not found"},
		{"the only secret", "DELETE", "/admin/v1/clients/" + id + "/secrets/1", nil, 409, "conflict",
			"secret 1 is client " + id + "'s only secret: add another first, or rotate-secret"},
		{"keys of a secret client", "PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"jwks_uri": "https://p.example/jwks.json"}, 409, "conflict",
			"client " + id + " authenticates with a secret, not keys (rotate-secret)"},
		{"revoked client", "POST", "/admin/v1/clients/" + revoked + "/rotate-secret", nil, 409, "revoked",
			"client " + revoked + ": client is revoked: a revoked client cannot be changed"},
		{"every problem of an organisation", "POST", "/admin/v1/orgs", map[string]any{"slug": "Bad Slug", "name": "", "environment": "moon"}, 400, "invalid_input",
			"invalid input: slug \"Bad Slug\": use 1-63 lower-case letters, digits and inner hyphens\nname: 1-200 characters required\nenvironment \"moon\": must be sandbox or live"},
		{"a limit of 0", "PUT", "/admin/v1/clients/" + id + "/rate-limit", map[string]any{"rate_limit_per_minute": 0}, 400, "invalid_input",
			"invalid input: rate_limit_per_minute 0: a limit must be at least 1 request per minute"},
		{"an operator client as a partner", "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "operators", "name": "x", "audience": "operator"}, 400, "invalid_input",
			"invalid input: operator clients are made with 'authserver operators create', not as partner clients"},
		{"a jwks_uri over http", "PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"jwks_uri": "http://p.example/jwks.json"}, 400, "invalid_input",
			`invalid input: jwks_uri "http://p.example/jwks.json": must be https (the operator may allow http: JWKS_URL_ALLOW_HTTP=true)`},
		{"a private jwks_uri", "PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"jwks_uri": "https://internal.example/jwks.json"}, 400, "invalid_input",
			`invalid input: jwks_uri "https://internal.example/jwks.json": the token service does not fetch from internal.example: address 10.0.0.9 is private-use (RFC 1918) (JWKS_URL_ALLOW_PRIVATE=true allows it)`},
		{"an unknown member", "PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"keys": []any{}}, 400, "invalid_request",
			`the body does not fit: json: unknown field "keys"`},
		{"an unknown nested member", "POST", "/admin/v1/orgs", `{"slug":"n","name":"N","environment":"live","extra":{"a":1}}`, 400, "invalid_request",
			`the body does not fit: json: unknown field "extra"`},
		{"the signing key", "POST", "/admin/v1/keys/" + signing + "/withdraw", nil, 409, "signing_key",
			"invalid input: the signing key cannot be withdrawn: make another key the signing key first ('keys generate --rotate' or 'keys promote')"},
		{"an unknown key", "POST", "/admin/v1/keys/nope/withdraw", nil, 404, "not_found", `key "nope": not found`},
	} {
		a := s.call(hc, c.method, c.path, c.body)
		wantProblem(t, c.what, a, c.status, c.code, c.detail, "")
	}
}

// TestRefusalCauseNotAnswered: what lies under a refusal (the resolver's
// words about a jwks_uri host, the JWK parser's about a key set) is not
// answered; the refusal says what to fix.
func TestRefusalCauseNotAnswered(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "causes", "name": "Causes", "environment": "live"})
	create := func(keys map[string]any) map[string]any {
		body := map[string]any{"organization_slug": "causes", "name": "k", "audience": "pharma", "scopes": []string{}, "auth_method": "private_key_jwt"}
		for k, v := range keys {
			body[k] = v
		}
		return body
	}
	for _, c := range []struct {
		what   string
		body   any
		detail string
	}{
		{"a host that does not resolve", create(map[string]any{"jwks_uri": "https://nowhere.example/jwks.json"}),
			`invalid input: jwks_uri "https://nowhere.example/jwks.json": host "nowhere.example" does not resolve, so it cannot be fetched`},
		{"not a key set", create(map[string]any{"jwks": map[string]any{"keys": "none"}}), "invalid input: keys: not a JWK set"},
	} {
		wantProblem(t, c.what, s.call(hc, "POST", "/admin/v1/clients", c.body), http.StatusBadRequest, "invalid_input", c.detail, "")
	}
}
