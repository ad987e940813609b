package tokenserver

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// manyFields is a form body of grant_type and n-1 more fields.
func manyFields(n int) string {
	var b strings.Builder
	b.WriteString("grant_type=client_credentials")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "&p%d=", i)
	}
	return b.String()
}

// manyKeys is a JSON object of grant_type and n-1 more keys.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString(`{"grant_type":"client_credentials"`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,"p%d":""`, i)
	}
	return b.String() + "}"
}

// TestParameterCap: a token or introspection request of more than
// MaxParams form fields or JSON keys is answered 400 invalid_request
// before the rest of its body is decoded (a malformed 17th field or a
// truncated object after the 16th key gets the same answer), and counts
// against its address's ceiling of failed requests. 16
// parameters still work.
func TestParameterCap(t *testing.T) {
	t.Parallel()
	const limit = 3
	e := newEnv(t, withTrust("127.0.0.1/32"), withCeiling(limit))
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tooMany := bodyInvalidRequest("request has more than 16 parameters")
	from := func(addr string) func(*http.Request) { return header("X-Forwarded-For", addr) }

	// At the cap: served, in both formats (Basic, so 16 body fields).
	tokenReply(t, post(t, e.url+PathToken, formType, manyFields(MaxParams), basic(id, secret)), "events.subscribe")
	tokenReply(t, post(t, e.url+PathToken, jsonType, manyKeys(MaxParams), basic(id, secret)), "events.subscribe")
	// Empty pairs are not fields.
	tokenReply(t, post(t, e.url+PathToken, formType, "&&&"+manyFields(MaxParams)+"&&&", basic(id, secret)), "events.subscribe")

	for i, tc := range []struct {
		name, path, ct, body string
	}{
		{"17 form fields", PathToken, formType, manyFields(MaxParams + 1)},
		{"17 JSON keys", PathToken, jsonType, manyKeys(MaxParams + 1)},
		{"8328 form fields (64 KiB)", PathToken, formType, manyFields(8328)},
		{"4722 JSON keys", PathToken, jsonType, manyKeys(4722)},
		{"malformed after the cap", PathToken, formType, manyFields(MaxParams) + "&%zz=1&=&x=%"},
		{"truncated JSON after the cap", PathToken, jsonType, strings.TrimSuffix(manyKeys(MaxParams), "}") + `,"x":"1", "y": [[[`},
		{"introspection, 17 form fields", PathIntrospect, formType, strings.Replace(manyFields(MaxParams+1), "grant_type=client_credentials", "token=x", 1)},
		{"introspection, 17 JSON keys", PathIntrospect, jsonType, manyKeys(MaxParams + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, e.url+tc.path, tc.ct, tc.body, basic(id, secret), from(fmt.Sprintf("203.0.113.%d", 10+i)))
			wantStatus(t, r, http.StatusBadRequest)
			wantHeaders(t, r, oauthHeaders(map[string]string{"Connection": ""}))
			wantJSON(t, r, tooMany)
		})
	}

	// Counted against the address's ceiling of failures that name no
	// client: past it, such requests get slow_down, while valid credentials
	// from the same address are still served.
	const flooder = "198.51.100.77"
	for range limit {
		wantJSON(t, post(t, e.url+PathToken, formType, manyFields(8328), from(flooder)), tooMany)
	}
	r := post(t, e.url+PathToken, formType, manyFields(8328), from(flooder))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantJSON(t, r, bodyBlocked)
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(flooder)), "events.subscribe")
}
