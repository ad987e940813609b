package tokenserver

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

var requestIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRoutes: unknown paths 404 and wrong methods 405 with Allow, both in
// the OAuth error format (RFC 6749 section 5.2) naming what to send
// instead; no redirect of an unclean path; health and readiness; a request
// id on every answer.
func TestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		method, path string
		status       int
		want         string
		headers      map[string]string
	}{
		{"GET", "/nope", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"POST", "/nope", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"GET", "/", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"POST", "/api/v1/oauth/token", 404, `{"error":"invalid_request","error_description":"no endpoint at this path: the path ends with a slash, POST /api/v1/oauth/token/"}`, nil},
		{"POST", "/api/v1/oauth/introspect", 404, `{"error":"invalid_request","error_description":"no endpoint at this path: the path ends with a slash, POST /api/v1/oauth/introspect/"}`, nil},
		{"POST", "/api/v1/oauth//token/", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"POST", "/api/v1/oauth/../oauth/token/", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"POST", "/api/v1/oauth/token/extra", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"GET", "/api/v1/me/", 404, `{"error":"invalid_request","error_description":"no endpoint at this path; the token endpoint is POST /api/v1/oauth/token/ and the server's metadata is GET /.well-known/oauth-authorization-server"}`, nil},
		{"GET", PathToken, 405, `{"error":"invalid_request","error_description":"this endpoint takes POST only"}`, map[string]string{"Allow": "POST"}},
		{"PUT", PathToken, 405, `{"error":"invalid_request","error_description":"this endpoint takes POST only"}`, map[string]string{"Allow": "POST"}},
		{"DELETE", PathIntrospect, 405, `{"error":"invalid_request","error_description":"this endpoint takes POST only"}`, map[string]string{"Allow": "POST"}},
		{"POST", PathJWKS, 405, `{"error":"invalid_request","error_description":"this endpoint takes GET or HEAD only"}`, map[string]string{"Allow": "GET, HEAD"}},
		{"POST", PathMetadata, 405, `{"error":"invalid_request","error_description":"this endpoint takes GET or HEAD only"}`, map[string]string{"Allow": "GET, HEAD"}},
		{"POST", "/healthz", 405, `{"error":"invalid_request","error_description":"this endpoint takes GET or HEAD only"}`, map[string]string{"Allow": "GET, HEAD"}},
		{"GET", "/healthz", 200, `{"status":"ok"}`, map[string]string{"Cache-Control": "no-store"}},
		{"GET", "/readyz", 200, `{"status":"ok"}`, map[string]string{"Cache-Control": "no-store"}},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			r := send(t, newRequest(t, tc.method, e.url+tc.path, "", nil))
			wantStatus(t, r, tc.status)
			if tc.status == 404 || tc.status == 405 { // the OAuth error format
				wantHeaders(t, r, oauthHeaders(tc.headers))
			} else {
				wantHeaders(t, r, jsonHeaders(tc.headers))
			}
			wantJSON(t, r, tc.want)
			if id := r.Header.Get("X-Request-Id"); !requestIDRE.MatchString(id) {
				t.Errorf("X-Request-Id %q", id)
			}
		})
	}
}

// TestRequestID: an id from a trusted proxy is echoed when sane; from
// anyone else, or insane, a fresh one is made. Every answer has its own.
func TestRequestID(t *testing.T) {
	t.Parallel()
	trusted := newEnv(t, withTrust("127.0.0.1"))
	untrusted := newEnv(t)
	for _, tc := range []struct {
		name, base, sent string
		echoed           bool
	}{
		{"trusted proxy", trusted.url, "req-42.a_B", true},
		{"trusted proxy, bad characters", trusted.url, "req 42;drop", false},
		{"trusted proxy, too long", trusted.url, strings.Repeat("a", 129), false},
		{"untrusted peer", untrusted.url, "req-42", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/nope", PathToken} {
				r := get(t, tc.base+path, header("X-Request-Id", tc.sent))
				got := r.Header.Get("X-Request-Id")
				if tc.echoed && got != tc.sent {
					t.Errorf("%s: X-Request-Id %q, want %q echoed", path, got, tc.sent)
				}
				if !tc.echoed && !requestIDRE.MatchString(got) {
					t.Errorf("%s: X-Request-Id %q, want a fresh id", path, got)
				}
			}
		})
	}
	a := get(t, untrusted.url+"/healthz").Header.Get("X-Request-Id")
	b := get(t, untrusted.url+"/healthz").Header.Get("X-Request-Id")
	if a == b {
		t.Errorf("two answers share the request id %s", a)
	}
	// The access record carries the same id.
	if !strings.Contains(untrusted.logs.String(), `"request_id":"`+a+`"`) {
		t.Errorf("request id %s not in the access log", a)
	}
}

func TestLimitKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
	} {
		if got := limitKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("limitKey(%s) = %s, want %s", in, got, want)
		}
	}
}
