//go:build unix

package tokenholes

import (
	"net/http"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// TestJSONGrantTypeNotAString (issue 59, hole 13): a JSON body whose
// grant_type is not a string names a grant type other than
// client_credentials, which the partner API's error table answers 400
// unsupported_grant_type (the code the issue was filed against answered
// invalid_request); introspection, which reads no grant_type, is
// unchanged.
func TestJSONGrantTypeNotAString(t *testing.T) {
	s := prepare(t)
	s.startAuth(t)
	id, secret := s.secretClient(t, "json")
	const unsupported = `{"error":"unsupported_grant_type","error_description":"grant_type must be client_credentials"}`
	for _, v := range []string{`123`, `true`, `["client_credentials"]`, `{"type":"client_credentials"}`} {
		a := post(t, s.hc, s.auth+pathToken, jsonType, `{"grant_type":`+v+`}`, e2etest.Basic(id, secret))
		wantAnswer(t, "grant_type "+v, a, http.StatusBadRequest, unsupported)
	}
	accessToken(t, "grant_type as a string", post(t, s.hc, s.auth+pathToken, jsonType, `{"grant_type":"client_credentials"}`, e2etest.Basic(id, secret)), "Bearer")
	a := post(t, s.hc, s.auth+"/api/v1/oauth/introspect/", jsonType, `{"grant_type":123,"token":"x"}`, e2etest.Basic(id, secret))
	wantAnswer(t, "introspection with grant_type 123", a, http.StatusBadRequest,
		`{"error":"invalid_request","error_description":"value of \"grant_type\" must be a string"}`)
}
