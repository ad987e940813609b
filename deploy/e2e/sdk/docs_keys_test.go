package sdk

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// keyClient is a private_key_jwt client of the sandbox organisation, with
// the private key whose public half it was registered with.
type keyClient struct {
	// jwks is the public JWK set it was registered with.
	jwks []byte
	id   string
	key  assertiontest.Key
}

// newKeyClient registers a private_key_jwt client of the sandbox
// organisation, holding the example client's scopes, with the JWK set
// jwks, as `authserver clients create --auth private_key_jwt --jwks-file`
// does.
func (f *docsFixture) newKeyClient(jwks []byte, key crypto.Signer) *keyClient {
	f.t.Helper()
	c, _, err := f.s.store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: "sandbox-simulation", Name: "Example hospital integration", Audience: clients.AudienceHospital,
		Scopes: []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe},
		Keys:   &clients.ClientKeySource{JWKS: jwks},
	})
	if err != nil {
		f.t.Fatalf("register the JWK set %s: %v", jwks, err)
	}
	set, err := jwk.Parse(jwks)
	if err != nil || set.Len() != 1 {
		f.t.Fatalf("JWK set %s: %v", jwks, err)
	}
	pub, _ := set.Key(0)
	kid, _ := pub.KeyID()
	alg, _ := pub.Algorithm()
	sa, ok := jwa.LookupSignatureAlgorithm(alg.String())
	if !ok {
		f.t.Fatalf("JWK set %s: no alg", jwks)
	}
	return &keyClient{jwks: jwks, id: c.ID, key: assertiontest.Key{KID: kid, Alg: sa, Signer: key}}
}

// assertion signs a fresh client assertion of k for the audience aud
// (RFC 7523 section 3), as the authentication guide describes it.
func (k *keyClient) assertion(t testing.TB, aud string) string {
	t.Helper()
	return k.key.Assertion(t, k.id, aud)
}

// keysFromScript runs, once, the guide's script key (a shell block marked
// "<!-- script: KEY -->") in an empty directory, registers a client with
// the jwks.json it writes, gets a token with an assertion signed by the
// key.pem it writes, and answers jwks.json as the scenario's body.
func (f *docsFixture) keysFromScript(key string) reply {
	f.t.Helper()
	if k, ok := f.keyed[key]; ok {
		return reply{Status: http.StatusOK, Header: http.Header{}, Body: k.jwks}
	}
	dir := filepath.Join(f.t.TempDir(), "keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		f.t.Fatal(err)
	}
	b, ok := f.scripts[key]
	if !ok {
		f.t.Fatalf("no guide has a script %q", key)
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			f.t.Fatalf("openssl is not installed: %v", err)
		}
		f.t.Skipf("openssl is not installed: %v", err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("%s: %v: %s", b.where, err, stderr.String())
	}
	jwks, err := os.ReadFile(filepath.Join(dir, "jwks.json"))
	if err != nil {
		f.t.Fatalf("%s: %v", b.where, err)
	}
	// key.pem as every documented client loads it: PKCS #8 (issue 27
	// point 10), read by the SDK.
	keyPEM, err := os.ReadFile(filepath.Join(dir, "key.pem"))
	if err != nil {
		f.t.Fatalf("%s: %v", b.where, err)
	}
	if block, _ := pem.Decode(keyPEM); block == nil || block.Type != "PRIVATE KEY" {
		f.t.Fatalf("%s: key.pem is not a PKCS #8 PEM key (BEGIN PRIVATE KEY), which WebCrypto needs", b.where)
	}
	priv, err := partnerclient.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		f.t.Fatalf("%s: the SDK cannot load key.pem: %v", b.where, err)
	}
	k := f.newKeyClient(jwks, priv.Key)
	form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {partnerclient.ClientAssertionType},
		"client_assertion": {k.assertion(f.t, issuer)}}
	if r := f.request(http.MethodPost, tokenPath, formType, form.Encode()); r.Status != http.StatusOK {
		f.t.Errorf("%s: a token with an assertion signed by key.pem: %d %s", b.where, r.Status, r.Body)
	}
	f.throughClients(b.where, filepath.Join(dir, "key.pem"), k)
	f.keyed[key] = k
	return reply{Status: http.StatusOK, Header: http.Header{}, Body: jwks}
}

// sdkAssertionPart decodes part i (0 header, 1 claims) of the assertion the
// Go SDK signs for a token request of the key client made by the guide's
// recipe, with the issuer's token endpoint URL as audience; the token
// request must succeed.
func (f *docsFixture) sdkAssertionPart(i int) reply {
	f.t.Helper()
	f.keysFromScript("jwks.json")
	k := f.keyed["jwks.json"]
	var sent string
	rec := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if v, err := url.ParseQuery(string(body)); err == nil {
			sent = v.Get("client_assertion")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	ts, err := partnerclient.NewTokenSource(partnerclient.Config{
		BaseURL: f.s.url, ClientID: k.id, PrivateKey: k.key.Signer, KeyID: k.key.KID,
		AssertionAudience: issuer + tokenPath, HTTPClient: rec,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := ts.Token(); err != nil {
		f.t.Fatalf("SDK token with private_key_jwt: %v", err)
	}
	parts := strings.Split(sent, ".")
	if len(parts) != 3 {
		f.t.Fatalf("the SDK sent no compact JWS as client_assertion: %q", sent)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{Status: http.StatusOK, Header: http.Header{}, Body: raw}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// assertionPlaceholder stands for a client assertion in the OpenAPI
// document's request examples.
const assertionPlaceholder = "eyJxxxxxxxx.eyJxxxxxxxx.xxxxxxxx"

// generatedKeyClient registers a private_key_jwt client with a P-256 key
// made here.
func (f *docsFixture) generatedKeyClient() *keyClient {
	f.t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	pub, err := jwk.Import(priv.Public())
	if err != nil {
		f.t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, "key-1")
	_ = pub.Set(jwk.AlgorithmKey, jwa.ES256())
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	jwks, err := json.Marshal(set)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.newKeyClient(jwks, priv)
}
