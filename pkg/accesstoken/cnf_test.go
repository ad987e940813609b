package accesstoken_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// jkt is a JWK SHA-256 thumbprint's form: 43 base64url characters.
const jkt = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"

// TestBoundTokenRoundTrip: a grant with a JKT gives a token whose claims
// carry cnf.jkt (RFC 9449 section 6.1) and verify back to the same
// Confirmation; a grant without one gives a bearer token without "cnf".
func TestBoundTokenRoundTrip(t *testing.T) {
	f := newFixture(t, accesstoken.AlgEdDSA)
	g := grant(1)
	g.JKT = jkt
	tok, c := f.issue(t, g)
	if c.Confirmation == nil || c.Confirmation.JKT != jkt || c.BoundKey() != jkt {
		t.Fatalf("issued claims cnf = %+v, want jkt %s", c.Confirmation, jkt)
	}
	got, err := f.verify.Verify(tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Confirmation == nil || *got.Confirmation != (accesstoken.Confirmation{JKT: jkt}) || got.BoundKey() != jkt {
		t.Fatalf("verified cnf = %+v, want jkt %s", got.Confirmation, jkt)
	}
	payload := payloadOf(t, tok)
	if !strings.HasSuffix(payload, `,"cnf":{"jkt":"`+jkt+`"}}`) {
		t.Errorf("payload %s: want cnf last, exactly {\"jkt\":...}", payload)
	}

	bearer, _ := f.issue(t, grant(1))
	if p := payloadOf(t, bearer); strings.Contains(p, "cnf") {
		t.Errorf("bearer payload %s carries cnf", p)
	}
	bc, err := f.verify.Verify(bearer)
	if err != nil || bc.Confirmation != nil || bc.BoundKey() != "" {
		t.Fatalf("bearer Verify = %+v, %v; want no confirmation", bc, err)
	}

	g.JKT = "not-a-thumbprint"
	if _, _, err := f.issuer.Issue(g); err == nil {
		t.Error("Issue with a malformed JKT succeeded")
	}
}

// TestStrictConfirmation: "cnf" must be exactly {"jkt": thumbprint},
// {"x5t#S256": thumbprint} or both (RFC 8705 section 3.1). Every token
// here carries a good signature.
func TestStrictConfirmation(t *testing.T) {
	w := newFuzzWorld(t)
	kid := w.kid(accesstoken.AlgEdDSA)
	hdr := map[string]any{"typ": "at+jwt", "kid": kid}
	raw := func(cnf string) []byte {
		p := string(fuzzClaims())
		return []byte(strings.TrimSuffix(p, "}") + `,"cnf":` + cnf + `}`)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    error
	}{
		{"jkt", raw(`{"jkt":"` + jkt + `"}`), nil},
		{"escaped name", raw(`{"\u006akt":"` + jkt + `"}`), nil},
		{"null", raw(`null`), accesstoken.ErrClaims},
		{"escaped cnf null", []byte(strings.TrimSuffix(string(fuzzClaims()), "}") + `,"\u0063nf":null}`), accesstoken.ErrClaims},
		{"empty object", raw(`{}`), accesstoken.ErrClaims},
		{"string", raw(`"` + jkt + `"`), accesstoken.ErrClaims},
		{"jkt empty", raw(`{"jkt":""}`), accesstoken.ErrClaims},
		{"jkt short", raw(`{"jkt":"` + jkt[:42] + `"}`), accesstoken.ErrClaims},
		{"jkt padded", raw(`{"jkt":"` + jkt + `="}`), accesstoken.ErrClaims},
		{"jkt std alphabet", raw(`{"jkt":"` + strings.ReplaceAll(jkt, "-", "+") + `"}`), accesstoken.ErrClaims},
		{"jkt a number", raw(`{"jkt":1}`), accesstoken.ErrClaims},
		{"jkt twice", raw(`{"jkt":"` + jkt + `","jkt":"` + jkt + `"}`), accesstoken.ErrClaims},
		{"JKT", raw(`{"JKT":"` + jkt + `"}`), accesstoken.ErrClaims},
		{"x5t#S256", raw(`{"x5t#S256":"` + jkt + `"}`), nil},
		{"jkt and x5t#S256", raw(`{"jkt":"` + jkt + `","x5t#S256":"` + jkt + `"}`), nil},
		{"x5t#S256 short", raw(`{"x5t#S256":"` + jkt[:42] + `"}`), accesstoken.ErrClaims},
		{"x5t#s256", raw(`{"x5t#s256":"` + jkt + `"}`), accesstoken.ErrClaims},
		{"x5t", raw(`{"x5t":"` + jkt + `"}`), accesstoken.ErrClaims},
		{"jkt and another method", raw(`{"jkt":"` + jkt + `","jwk":{}}`), accesstoken.ErrClaims},
		{"CNF", []byte(strings.TrimSuffix(string(fuzzClaims()), "}") + `,"CNF":{"jkt":"` + jkt + `"}}`), accesstoken.ErrClaims},
		{"cnf twice", []byte(strings.TrimSuffix(string(raw(`{"jkt":"`+jkt+`"}`)), "}") + `,"cnf":{"jkt":"` + jkt + `"}}`), accesstoken.ErrClaims},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := w.verifier.Verify(w.sign(t, accesstoken.AlgEdDSA, hdr, tc.payload))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if err == nil && c.BoundKey() != jkt && c.BoundCertificate() != jkt {
				t.Errorf("BoundKey = %q, BoundCertificate = %q, want %q", c.BoundKey(), c.BoundCertificate(), jkt)
			}
		})
	}
}

// payloadOf is a token's claims set as signed (JSON).
func payloadOf(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(token, accesstoken.Prefix), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q: not a compact JWS", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
