package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// phToken in a fuzz input is replaced by a token valid for the whole run,
// so that the corpus reaches the admitted path too.
const phToken = "{{TOKEN}}"

// bearerModel is RFC 6750 section 2.1 written as a regular expression,
// independently of package admission's parser: "Bearer" (any case), one or
// more spaces, one b64token, nothing else.
var (
	bearerModel  = regexp.MustCompile(`^(?i:bearer) +([A-Za-z0-9\-._~+/]+=*)$`)
	bearerScheme = regexp.MustCompile(`^(?i:bearer)(?: |$)`)
)

// FuzzBearerHeader sends one or two Authorization headers and a query
// string through the whole resource server (Gin, authentication, token
// verification, the Redis admission) on the test Redis: no panic, and only
// the documented answers, as bearerModel says: 200 for the run's real token,
// otherwise 400 or 401 {"detail"} with the matching WWW-Authenticate
// challenge. (FuzzParse in package admission checks the token the parser
// reads against the same model.)
func FuzzBearerHeader(f *testing.F) {
	fx := newFixture(f)
	c := fx.client("fuzz-org", clients.EnvironmentSandbox, clients.AudiencePharma, clients.ScopeEventsSubscribe)
	issued := fx.clock.Now()
	token := fx.token(c, clients.ScopeEventsSubscribe)
	// Token time is fixed at issue; the rate limit's clock moves a minute
	// per request, so the limit never answers for the parser.
	rate := newClock()
	cfg := fx.config()
	cfg.Now = func() time.Time { return issued }
	cfg.RateNow = rate.Now
	h := fx.newServer(slog.New(slog.DiscardHandler), cfg, fx.deps()).handler

	for _, s := range []struct{ auth, second, query string }{
		{"Bearer " + phToken, "", ""},
		{"bearer " + phToken, "", "format=json"},
		{"BEARER   " + phToken, "", ""},
		{"Bearer " + phToken, "Bearer " + phToken, ""},
		{"Bearer " + phToken, "", "access_token=" + phToken},
		{"", "", "access_token=x"},
		{"Bearer " + phToken, "", "%zz&access_token"},
		{"Bearer " + phToken + " ", "", ""},
		{"Bearer\t" + phToken, "", ""},
		{"Bearer", "", ""},
		{"Bearer ", "", ""},
		{"Bearer svc_at_" + phToken, "", ""},
		{"Bearer svc_at_a.b.c==", "", ""},
		{"Bearer svc_at_a=b", "", ""},
		{"Bearer " + strings.Repeat("A", accesstoken.MaxTokenLength+1), "", ""},
		{"Bearer svc_at_\x00\xff", "", ""},
		{"Bearer svc_at_é", "", ""},
		{"Basic dXNlcjpwYXNz", "", ""},
		{"Token abc", "", ""},
		{"", "", ""},
	} {
		f.Add(s.auth, s.second, s.query)
	}
	f.Fuzz(func(t *testing.T, auth, second, query string) {
		auth = strings.ReplaceAll(auth, phToken, token)
		second = strings.ReplaceAll(second, phToken, token)
		query = strings.ReplaceAll(query, phToken, token)
		req := &http.Request{
			Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/me/", RawQuery: query},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, RemoteAddr: "192.0.2.1:1234", Host: "api.test",
		}
		var headers []string
		if auth != "" || second != "" {
			headers = append(headers, auth)
		}
		if second != "" {
			headers = append(headers, second)
		}
		if headers != nil {
			req.Header["Authorization"] = headers
		}

		q, qerr := url.ParseQuery(query)
		queryToken := strings.Contains(query, "access_token") && (qerr != nil || q.Has("access_token"))
		var want *problem
		wantToken := ""
		switch {
		case queryToken, len(headers) > 1:
			want = errInvalidRequest
		case len(headers) == 0 || !bearerScheme.MatchString(headers[0]):
			want = errNoToken
		default:
			m := bearerModel.FindStringSubmatch(headers[0])
			if m == nil || len(m[1]) > accesstoken.MaxTokenLength {
				want = errInvalidToken
			} else {
				wantToken = m[1]
			}
		}

		// The same request through the whole server.
		rate.Add(time.Minute + time.Second)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkMeAnswer(t, rec, want, wantToken == token)
	})
}

// checkMeAnswer checks an answer of GET /api/v1/me/ against the parse
// outcome: want (a problem), or a token that is the real one (200) or not
// (401 invalid_token).
func checkMeAnswer(t *testing.T, rec *httptest.ResponseRecorder, want *problem, real bool) {
	t.Helper()
	if rec.Header().Get("Content-Type") != jsonContentType {
		t.Fatalf("Content-Type %q; body %q", rec.Header().Get("Content-Type"), rec.Body)
	}
	if want == nil && real {
		var d clientDescription
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil || d.APIVersion != APIVersion {
			t.Fatalf("the real token got %d %s", rec.Code, rec.Body)
		}
		return
	}
	if want == nil {
		want = errInvalidToken // well-formed, but not a token of the issuer
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // httpserver.WriteDetail does not escape HTML
	_ = enc.Encode(map[string]string{"detail": want.detail})
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if rec.Code != want.status || rec.Body.String() != string(body) || rec.Header().Get("WWW-Authenticate") != want.challenge {
		t.Fatalf("got %d %s (WWW-Authenticate %q); want %d %s (%q)", rec.Code, rec.Body, rec.Header().Get("WWW-Authenticate"), want.status, body, want.challenge)
	}
}
