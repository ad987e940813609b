package admission

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// bearerModel is RFC 6750 section 2.1 (and RFC 9449 section 7.1) written
// as a regular expression, independently of parse: "Bearer" or "DPoP" (any
// case), one or more spaces, one b64token, nothing else.
var (
	bearerModel  = regexp.MustCompile(`^(?i:bearer|dpop) +([A-Za-z0-9\-._~+/]+=*)$`)
	bearerScheme = regexp.MustCompile(`^(?i:bearer|dpop)(?: |$)`)
	dpopScheme   = regexp.MustCompile(`^(?i:dpop)(?: |$)`)
)

// FuzzParse checks parse against bearerModel with one or two Authorization
// headers and a query string, on an admission that refuses tokens in the
// query: the result, and the very token read.
func FuzzParse(f *testing.F) {
	for _, s := range []struct{ auth, second, query string }{
		{"Bearer svc_at_abc", "", ""},
		{"bearer svc_at_abc", "", "format=json"},
		{"BEARER   svc_at_abc", "", ""},
		{"Bearer a", "Bearer a", ""},
		{"Bearer a", "", "access_token=a"},
		{"", "", "access_token=x"},
		{"Bearer a", "", "%zz&access_token"},
		{"Bearer a ", "", ""},
		{"Bearer\ta", "", ""},
		{"Bearer", "", ""},
		{"Bearer ", "", ""},
		{"Bearer svc_at_a.b.c==", "", ""},
		{"Bearer svc_at_a=b", "", ""},
		{"Bearer " + strings.Repeat("A", accesstoken.MaxTokenLength+1), "", ""},
		{"Bearer svc_at_\x00\xff", "", ""},
		{"Bearer svc_at_é", "", ""},
		{"Basic dXNlcjpwYXNz", "", ""},
		{"Token abc", "", ""},
		{"", "", ""},
		{"DPoP svc_at_abc", "", ""},
		{"dpop  svc_at_abc", "", ""},
		{"DPoP", "", ""},
		{"DPoP ", "", ""},
		{"DPoPx abc", "", ""},
		{"DPoP a", "Bearer a", ""},
	} {
		f.Add(s.auth, s.second, s.query)
	}
	a := &Admission{cfg: Config{RefuseQueryToken: true}}
	f.Fuzz(func(t *testing.T, auth, second, query string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/me/", RawQuery: query}, Header: http.Header{}}
		var headers []string
		if auth != "" || second != "" {
			headers = append(headers, auth)
		}
		if second != "" {
			headers = append(headers, second)
		}
		if headers != nil {
			r.Header["Authorization"] = headers
		}
		cred, got, err := a.parse(r)

		q, qerr := url.ParseQuery(query)
		queryToken := strings.Contains(query, "access_token") && (qerr != nil || q.Has("access_token"))
		want, wantToken := Admitted, ""
		switch {
		case queryToken, len(headers) > 1:
			want = MalformedRequest
		case len(headers) == 0 || !bearerScheme.MatchString(headers[0]):
			want = MissingToken
		default:
			m := bearerModel.FindStringSubmatch(headers[0])
			if m == nil || len(m[1]) > accesstoken.MaxTokenLength {
				want = MalformedToken
			} else {
				wantToken = m[1]
			}
		}
		if got != want || cred.Token != wantToken || (err == nil) != (want == Admitted) {
			t.Fatalf("headers %q, query %q: parse = %q, %v, %v; want %q, %v", headers, query, cred.Token, got, err, wantToken, want)
		}
		if wantDPoP := len(headers) == 1 && dpopScheme.MatchString(headers[0]); cred.DPoP != wantDPoP && !queryToken {
			t.Fatalf("headers %q: DPoP %v, want %v", headers, cred.DPoP, wantDPoP)
		}
	})
}
