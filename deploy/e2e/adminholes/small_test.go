//go:build unix

package adminholes

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

// TestSmallHoles (issue 59 point 14), on the wire of the real binaries:
//   - POST /admin/v1/clients without scopes is refused as the CLI refuses
//     `clients create` without --scopes (one rule, authserver/operations);
//     "scopes": [] still makes a client with no scope;
//   - a listing cursor this API did not give, a well-formed one naming no
//     client of the listing included, is 400 "cursor is not one this API
//     gave";
//   - a jwks_uri with port 0 or 65536 is refused; one behind exactly 3
//     redirects serves its keys, one behind 4 does not;
//   - a name made only of invisible characters (U+200B, U+FEFF, U+00AD) is
//     refused, for an organisation and a client;
//   - GET /api/v1/me without its slash is a 404 that names the path, as the
//     token paths do.
func TestSmallHoles(t *testing.T) {
	s := startStack(t)
	id, secret := s.credentials(t, "operators", "create", "--name", "small")
	auth := "Bearer " + s.token(t, id, secret, "")
	post := func(path string, body any) answer {
		return s.call(t, "POST", s.admin+path, body, "Authorization", auth)
	}
	get := func(path string) answer { return s.call(t, "GET", s.admin+path, nil, "Authorization", auth) }

	t.Run("scopes required", func(t *testing.T) {
		a := post("/admin/v1/clients", map[string]any{"organization_slug": org, "name": "No scopes", "audience": "pharma"})
		wantProblem(t, "a client without scopes", a, 400, "invalid_input",
			"invalid input: scopes are required: list the client's scopes (an empty list makes a client with no scope)")
		if a := post("/admin/v1/clients", map[string]any{"organization_slug": org, "name": "Empty scopes", "audience": "pharma", "scopes": []string{}}); a.status != 201 {
			t.Errorf(`"scopes": []: %d %s, want 201`, a.status, a.body)
		}
	})

	t.Run("forged cursor", func(t *testing.T) {
		for _, name := range []string{"A", "B"} {
			if a := post("/admin/v1/clients", map[string]any{"organization_slug": org, "name": name, "audience": "pharma", "scopes": []string{}}); a.status != 201 {
				t.Fatalf("create: %d %s", a.status, a.body)
			}
		}
		first := get("/admin/v1/clients?org=" + org + "&limit=1")
		var page struct {
			Next string `json:"next_cursor"`
		}
		if err := json.Unmarshal(first.body, &page); err != nil || first.status != 200 || page.Next == "" {
			t.Fatalf("first page: %d %s", first.status, first.body)
		}
		if a := get("/admin/v1/clients?org=" + org + "&limit=1&cursor=" + page.Next); a.status != 200 {
			t.Errorf("the cursor the API gave: %d %s, want 200", a.status, a.body)
		}
		forged := base64.RawURLEncoding.EncodeToString([]byte(clients.NewClientID()))
		wantProblem(t, "a well-formed cursor naming no client", get("/admin/v1/clients?org="+org+"&cursor="+forged), 400, "invalid_request", "cursor is not one this API gave")
		wantProblem(t, "a well-formed cursor, every organisation", get("/admin/v1/clients?cursor="+forged), 400, "invalid_request", "cursor is not one this API gave")
		// A cursor of one listing is not one of another's: the other
		// organisation's listing never ended at a client of org.
		if a := post("/admin/v1/orgs", map[string]any{"slug": "holes-other", "name": "Other", "environment": "live"}); a.status != 201 {
			t.Fatalf("create org: %d %s", a.status, a.body)
		}
		wantProblem(t, "another listing's cursor", get("/admin/v1/clients?org=holes-other&cursor="+page.Next), 400, "invalid_request", "cursor is not one this API gave")
		wantProblem(t, "a cursor that is not base64", get("/admin/v1/clients?cursor=%21%21"), 400, "invalid_request", "cursor is not one this API gave")
	})

	t.Run("jwks_uri", func(t *testing.T) {
		key := assertiontest.NewKey(t, "k1", jwa.ES256())
		keysAt := startRedirects(t, assertiontest.JWKS(t, key))
		create := func(uri string) answer {
			return post("/admin/v1/clients", map[string]any{"organization_slug": org, "name": "Keys", "audience": "pharma", "scopes": []string{},
				"auth_method": "private_key_jwt", "jwks_uri": uri})
		}
		for _, uri := range []string{"http://127.0.0.1:0/jwks.json", "http://127.0.0.1:65536/jwks.json"} {
			wantProblem(t, "jwks_uri "+uri, create(uri), 400, "invalid_input", `invalid input: jwks_uri "`+uri+`": the port must be 1-65535`)
		}
		for hops, want := range map[int]int{3: 200, 4: 503} { // 503: the keys could not be fetched
			a := create(keysAt(hops))
			var c struct {
				ID string `json:"client_id"`
			}
			if err := json.Unmarshal(a.body, &c); a.status != 201 || err != nil {
				t.Fatalf("create with %s: %d %s", keysAt(hops), a.status, a.body)
			}
			req, _ := http.NewRequest(http.MethodPost, s.issuer+"/api/v1/oauth/token/", nil)
			form := e2etest.Form("grant_type", "client_credentials", "client_id", c.ID,
				"client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion", key.Assertion(t, c.ID, s.issuer))
			tok := s.call(t, "POST", req.URL.String(), form, "Content-Type", "application/x-www-form-urlencoded")
			if tok.status != want {
				t.Errorf("token with keys behind %d redirects: %d %s, want %d", hops, tok.status, tok.body, want)
			}
		}
	})

	t.Run("invisible names", func(t *testing.T) {
		const detail = "invalid input: name: only invisible characters (spaces, format characters such as U+200B, U+FEFF or U+00AD, marks, fillers): a name needs a character that shows"
		for _, name := range []string{"\u200b", "\ufeff", "\u00ad", "\u200b\ufeff\u00ad"} {
			wantProblem(t, "org named "+strconv.QuoteToASCII(name), post("/admin/v1/orgs", map[string]any{"slug": "invisible", "name": name, "environment": "live"}),
				400, "invalid_input", detail)
			wantProblem(t, "client named "+strconv.QuoteToASCII(name), post("/admin/v1/clients", map[string]any{"organization_slug": org, "name": name, "audience": "pharma", "scopes": []string{}}),
				400, "invalid_input", detail)
		}
		if a := get("/admin/v1/orgs/invisible"); a.status != 404 {
			t.Errorf("an invisible-named org was made: %d %s", a.status, a.body)
		}
	})

	t.Run("me without its slash", func(t *testing.T) {
		const want = `{"detail":"no endpoint at this path: the path ends with a slash, GET /api/v1/me/"}`
		for _, method := range []string{"GET", "HEAD"} {
			a := s.call(t, method, s.api+"/api/v1/me", nil)
			if a.status != 404 || (method == "GET" && string(a.body) != want) {
				t.Errorf("%s /api/v1/me: %d %s, want 404 %s", method, a.status, a.body, want)
			}
		}
		if a := s.call(t, "GET", s.api+"/api/v1/nothing", nil); a.status != 404 || string(a.body) != `{"detail":"not found"}` {
			t.Errorf("GET /api/v1/nothing: %d %s, want the plain 404", a.status, a.body)
		}
	})
}

// startRedirects serves jwks at /jwks.json on a port of the suite's range,
// and /hop/N redirecting to /hop/N-1, /hop/1 to the key set; it returns
// the URL behind n redirects.
func startRedirects(t *testing.T, jwks []byte) func(n int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port(t)))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		switch {
		case err != nil || n < 1:
			http.NotFound(w, r)
		case n == 1:
			http.Redirect(w, r, "/jwks.json", http.StatusFound)
		default:
			http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusFound)
		}
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + l.Addr().String()
	return func(n int) string { return base + "/hop/" + strconv.Itoa(n) }
}
