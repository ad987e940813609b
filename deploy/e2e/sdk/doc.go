// Package sdk tests the partner SDK (pkg/partnerclient) end to end against
// the real servers: the token service (authserver/tokenserver) and the
// resource server (resourceserver/api) run in-process over httptest, on the
// real Redis (or a redis-server of the test's own that it kills), routed as
// the edge proxy routes them. Nothing is mocked: the tests count the
// requests on the wire and read the answers the servers really give.
//
// keys_test.go covers private_key_jwt and revocation against the servers,
// their issuer the stack's own URL (selfIssued) so the SDK's default
// assertion audience, the token endpoint URL, is the server's: ES256, EdDSA
// and RS256 keys registered as JWK sets and read with ParsePrivateJWK, aud
// as the token URL and as the issuer, a wrong key (*TokenError
// invalid_client, not retried), RevokeCached (the API refuses the old token
// at once, the next call gets a fresh one), Revoke with Basic and with an
// assertion, an unknown token revoked without error.
//
// It also holds the documentation's check against the wire
// (TestDocsEqualTheWire, TestOpenAPIRequestExamples): every example answer
// of the guides and of the OpenAPI document is reproduced on the real
// servers and compared (status, headers, body), and every documented curl
// command and example request is sent as written.
//
// The package has tests only; pkg/partnerclient may not import the servers,
// so its tests against them live here. pkg/partnerclient is also a module of
// its own (go 1.22, requiring only golang.org/x/oauth2 and golang.org/x/sync),
// which `go test ./...` at the root does not enter: TestSDKModule runs its
// vet and tests (with -race when this package has it) and checks its
// go directive and requirements.
package sdk
