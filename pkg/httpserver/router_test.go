package httpserver_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/metrics"
)

// TestRouter: exact paths (no subtree, no redirect), HEAD on GET routes,
// 404 and 405 (with Allow) through the surface's own writer, path values
// and the matched pattern (routes with and without wildcards take different
// ways through the router), and bounded metrics labels.
func TestRouter(t *testing.T) {
	ok := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+" "+r.PathValue("id")+" "+r.Pattern)
		})
	}
	misrouted := func(w http.ResponseWriter, r *http.Request, status int, allow []string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, "misrouted %d %v", status, allow)
	}
	m := metrics.New("test")
	h := httpserver.Base{Observer: m}.Wrap(httpserver.NewRouter([]httpserver.Route{
		{Pattern: "POST /token/", Handler: ok("token")},
		{Pattern: "GET /items/{id}", Handler: ok("item")},
		{Pattern: "DELETE /items/{id}", Handler: ok("delete")},
		{Pattern: "GET /healthz", Handler: ok("health")},
	}, misrouted))
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		status       int
		body, allow  string
	}{
		{"POST", "/token/", 200, "token  POST /token/{$}", ""},
		{"GET", "/items/42", 200, "item 42 GET /items/{id}", ""},
		{"HEAD", "/items/42", 200, "", ""},
		{"DELETE", "/items/42", 200, "delete 42 DELETE /items/{id}", ""},
		{"GET", "/healthz", 200, "health  GET /healthz", ""},
		{"GET", "/token/", 405, "misrouted 405 [POST]", "POST"},
		{"PUT", "/items/42", 405, "misrouted 405 [DELETE GET HEAD]", "DELETE, GET, HEAD"},
		{"POST", "/healthz", 405, "misrouted 405 [GET HEAD]", "GET, HEAD"},
		{"POST", "/token", 404, "misrouted 404 []", ""},       // no redirect to the slash
		{"POST", "/token/x", 404, "misrouted 404 []", ""},     // no subtree
		{"POST", "//token/", 404, "misrouted 404 []", ""},     // no redirect to the clean path
		{"GET", "/a/../healthz", 404, "misrouted 404 []", ""}, // nor here
		{"GET", "/", 404, "misrouted 404 []", ""},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.URL.Opaque = tc.path // sent as written
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || string(body) != tc.body || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %q Allow %q; want %d %q Allow %q", tc.method, tc.path, res.StatusCode, body, res.Header.Get("Allow"), tc.status, tc.body, tc.allow)
		}
	}
	wantRequests(t, m, `
partnerapi_http_requests_total{code="2xx",method="DELETE",route="/items/{id}"} 1
partnerapi_http_requests_total{code="2xx",method="GET",route="/items/{id}"} 1
partnerapi_http_requests_total{code="2xx",method="HEAD",route="/items/{id}"} 1
partnerapi_http_requests_total{code="2xx",method="GET",route="/healthz"} 1
partnerapi_http_requests_total{code="2xx",method="POST",route="/token/"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="/token/"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="unmatched"} 2
partnerapi_http_requests_total{code="4xx",method="POST",route="/healthz"} 1
partnerapi_http_requests_total{code="4xx",method="POST",route="unmatched"} 3
partnerapi_http_requests_total{code="4xx",method="PUT",route="/items/{id}"} 1
`)
}

func TestWriteDetail(t *testing.T) {
	rec := httptest.NewRecorder()
	httpserver.WriteDetail(rec, 401, http.Header{"Www-Authenticate": {"Bearer"}}, "send Authorization: Bearer <ACCESS_TOKEN>")
	if rec.Code != 401 || rec.Body.String() != `{"detail":"send Authorization: Bearer <ACCESS_TOKEN>"}` ||
		rec.Header().Get("Content-Type") != "application/json; charset=utf-8" || rec.Header().Get("Content-Length") != "54" ||
		rec.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}
