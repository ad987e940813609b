package tokenserver

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// jwksKeys decodes a JWKS answer: each key's members, by kid.
func jwksKeys(t *testing.T, r reply) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	m := decode(t, r.Body)
	if len(m) != 1 {
		t.Errorf("JWKS has members other than keys: %s", r.Body)
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, k := range doc.Keys {
		kid, _ := k["kid"].(string)
		out[kid] = k
	}
	return out
}

// TestJWKS (point 11): public keys only, each with kty, crv, x, kid, alg and
// use; cacheable.
func TestJWKS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := send(t, newRequest(t, method, e.url+PathJWKS, "", nil))
		wantStatus(t, r, http.StatusOK)
		wantHeaders(t, r, jsonHeaders(map[string]string{"Cache-Control": "public, max-age=300", "Pragma": ""}))
		if r.Header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id")
		}
		if method == http.MethodHead {
			if len(r.Body) != 0 {
				t.Errorf("HEAD answered a body")
			}
			continue
		}
		keys := jwksKeys(t, r)
		k, ok := keys[e.keys.SigningKeyID()]
		if len(keys) != 1 || !ok {
			t.Fatalf("JWKS %s, want the one key %s", r.Body, e.keys.SigningKeyID())
		}
		var names []string
		for name := range k {
			names = append(names, name)
		}
		sort.Strings(names)
		if got := strings.Join(names, " "); got != "alg crv kid kty use x" {
			t.Errorf("key members %q, want exactly alg crv kid kty use x (no private \"d\")", got)
		}
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["use"] != "sig" {
			t.Errorf("key %v", k)
		}
	}
}

// TestJWKSES256: an ES256 key is published with its public point only.
func TestJWKSES256(t *testing.T) {
	t.Parallel()
	key, err := accesstoken.GenerateKey(accesstoken.AlgES256)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	base, _ := e.start(ks)
	k := jwksKeys(t, get(t, base+PathJWKS))[ks.SigningKeyID()]
	if k == nil || k["d"] != nil || k["kty"] != "EC" || k["crv"] != "P-256" || k["alg"] != "ES256" || k["x"] == nil || k["y"] == nil {
		t.Fatalf("ES256 key %v", k)
	}
	id, secret := e.client(clients.AudiencePharma)
	tok := e.token(t, base, id, secret, "")
	if h, _ := tokenParts(t, tok); h["alg"] != "ES256" || h["kid"] != ks.SigningKeyID() {
		t.Errorf("header %v", h)
	}
	wantJSON(t, introspect(t, base, id, secret, tok), activeBody(t, tok))
}

// TestSigningKeyRotation (point 10): after Rotated(newKey, 1), new tokens
// carry the new kid, tokens of the old key still verify, and the JWKS
// publishes both; a set that dropped the old key refuses its tokens.
func TestSigningKeyRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	oldKid := e.keys.SigningKeyID()
	oldTok := e.token(t, e.url, id, secret, "")

	newKey, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := e.keys.Rotated(newKey, 1)
	if err != nil {
		t.Fatal(err)
	}
	newKid := rotated.SigningKeyID()
	if newKid == oldKid {
		t.Fatal("rotation kept the kid")
	}
	base, _ := e.start(rotated) // the restarted service

	newTok := e.token(t, base, id, secret, "")
	if h, _ := tokenParts(t, newTok); h["kid"] != newKid {
		t.Errorf("new token kid %v, want %s", h["kid"], newKid)
	}
	wantJSON(t, introspect(t, base, id, secret, oldTok), activeBody(t, oldTok))
	wantJSON(t, introspect(t, base, id, secret, newTok), activeBody(t, newTok))
	keys := jwksKeys(t, get(t, base+PathJWKS))
	if len(keys) != 2 || keys[oldKid] == nil || keys[newKid] == nil {
		t.Errorf("JWKS kids %v, want %s and %s", keys, newKid, oldKid)
	}
	// The service still on the old set does not know the new key.
	wantJSON(t, introspect(t, e.url, id, secret, newTok), bodyInactive)

	// Keeping no earlier key retires the old one: its tokens die.
	newer, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	retired, err := rotated.Rotated(newer, 0)
	if err != nil {
		t.Fatal(err)
	}
	base3, _ := e.start(retired)
	wantJSON(t, introspect(t, base3, id, secret, oldTok), bodyInactive)
	wantJSON(t, introspect(t, base3, id, secret, newTok), bodyInactive)
	if keys := jwksKeys(t, get(t, base3+PathJWKS)); len(keys) != 1 || keys[retired.SigningKeyID()] == nil {
		t.Errorf("JWKS after retiring: %v", keys)
	}
}

// TestMetadata (point 11): the RFC 8414 document, exactly.
func TestMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := get(t, e.url+PathMetadata)
	wantStatus(t, r, http.StatusOK)
	wantHeaders(t, r, jsonHeaders(map[string]string{"Cache-Control": "public, max-age=300"}))
	wantJSON(t, r, `{
		"issuer": "https://auth.example.test",
		"token_endpoint": "https://auth.example.test/api/v1/oauth/token/",
		"jwks_uri": "https://auth.example.test/.well-known/jwks.json",
		"introspection_endpoint": "https://auth.example.test/api/v1/oauth/introspect/",
		"revocation_endpoint": "https://auth.example.test/api/v1/oauth/revoke/",
		"grant_types_supported": ["client_credentials"],
		"response_types_supported": [],
		"token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
		"token_endpoint_auth_signing_alg_values_supported": ["ES256", "ES384", "RS256", "RS384", "PS256", "EdDSA", "Ed25519"],
		"introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
		"introspection_endpoint_auth_signing_alg_values_supported": ["ES256", "ES384", "RS256", "RS384", "PS256", "EdDSA", "Ed25519"],
		"revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
		"revocation_endpoint_auth_signing_alg_values_supported": ["ES256", "ES384", "RS256", "RS384", "PS256", "EdDSA", "Ed25519"],
		"dpop_signing_alg_values_supported": ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
		"scopes_supported": ["programme.metrics.read", "events.subscribe", "patients.read", "referrals.write"],
		"service_documentation": "https://auth.example.test/llms.txt"
	}`)
}

// TestMetadataIssuerTrailingSlash: endpoint URLs never get a double slash.
func TestMetadataIssuerTrailingSlash(t *testing.T) {
	t.Parallel()
	data, err := buildMetadata(Config{Issuer: "https://auth.example.test/"})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, data)
	if m["issuer"] != "https://auth.example.test/" || m["token_endpoint"] != "https://auth.example.test/api/v1/oauth/token/" {
		t.Errorf("metadata %s", data)
	}
}
