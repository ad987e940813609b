//go:build unix

package clients

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// TestSecretRotation: a rotation without downtime with the CLI on the real
// binaries. add-secret gives a second secret; tokens of both work; after
// retire-secret of the first, its tokens are refused at /me and the secret
// at the token endpoint, while the second secret and its tokens live on.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	id, first := s.secretClient(t, "rotating")
	oldToken := s.basicToken(t, id, first)

	added := s.cliJSON(t, "clients", "add-secret", id)
	second, _ := added["client_secret"].(string)
	if !strings.HasPrefix(second, "svc_cs_") || second == first || added["secret_id"] != float64(2) || added["client_id"] != id {
		t.Fatalf("add-secret: %v", added)
	}
	if got := secretIDs(added); !reflect.DeepEqual(got, []float64{1, 2}) {
		t.Fatalf("add-secret: secret ids %v, want [1 2]", got)
	}
	newToken := s.basicToken(t, id, second)
	for name, tok := range map[string]string{"old secret's token": oldToken, "new secret's token": newToken, "old secret's next token": s.basicToken(t, id, first)} {
		wantMe(t, name+" before retire-secret", s.me(t, tok), id, "rotating")
	}

	retired := s.cliJSON(t, "clients", "retire-secret", id, "1")
	if got := secretIDs(retired); !reflect.DeepEqual(got, []float64{2}) {
		t.Fatalf("retire-secret: secret ids %v, want [2]: %v", got, retired)
	}
	wantRefused(t, "old secret's token after retire-secret", s.me(t, oldToken))
	wantMe(t, "new secret's token after retire-secret", s.me(t, newToken), id, "rotating")
	a, _ := s.token(t, e2etest.Form("grant_type", "client_credentials"), e2etest.Basic(id, first))
	wantInvalidClient(t, "the retired secret", a)
	wantMe(t, "a token of the new secret after retire-secret", s.me(t, s.basicToken(t, id, second)), id, "rotating")

	// The next rotation: a third secret beside the second, and no fourth.
	third := s.cliJSON(t, "clients", "add-secret", id)
	if third["secret_id"] != float64(3) || !reflect.DeepEqual(secretIDs(third), []float64{2, 3}) {
		t.Fatalf("add-secret after retire-secret: %v", third)
	}
	_, stderr, err := s.CLIStatus("clients", "add-secret", id)
	if err == nil || !strings.Contains(stderr, "already holds two secrets: retire one first") {
		t.Fatalf("a third secret: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = s.CLIStatus("clients", "retire-secret", id, "1")
	if err == nil || stderr == "" {
		t.Fatalf("retiring a retired secret: err %v, stderr %q", err, stderr)
	}
}

// secretIDs are the secret_id of a client record's secrets.
func secretIDs(c map[string]any) []float64 {
	list, _ := c["secrets"].([]any)
	ids := []float64{}
	for _, e := range list {
		m, _ := e.(map[string]any)
		id, _ := m["secret_id"].(float64)
		ids = append(ids, id)
	}
	return ids
}

// TestRotateKeys: rotate-keys on the real binaries replaces a key client's
// public keys: every token it got with the old key is refused at /me, the
// old key's assertions are refused, the new key's accepted.
func TestRotateKeys(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	old, fresh := newKey(t, "2026", jwa.ES256()), newKey(t, "2027", jwa.EdDSA())
	id := s.keyClient(t, "key rotation", old)
	tokens := []string{s.keyToken(t, old, id), s.keyToken(t, old, id)}
	for i, tok := range tokens {
		wantMe(t, "old key's token "+strconv.Itoa(i+1), s.me(t, tok), id, "key rotation")
	}
	a, _ := s.token(t, assertionForm(s.assertion(t, fresh, id)))
	wantInvalidClient(t, "the new key before rotate-keys", a)

	rotated := s.cliJSON(t, "clients", "rotate-keys", id, "--jwks-file", s.jwksFile(t, fresh))
	if rotated["client_id"] != id || rotated["auth_method"] != "private_key_jwt" {
		t.Fatalf("rotate-keys: %v", rotated)
	}
	for i, tok := range tokens {
		wantRefused(t, "old key's token "+strconv.Itoa(i+1)+" after rotate-keys", s.me(t, tok))
	}
	a, _ = s.token(t, assertionForm(s.assertion(t, old, id)))
	wantInvalidClient(t, "the old key after rotate-keys", a)
	tok := s.keyToken(t, fresh, id)
	wantMe(t, "new key's token", s.me(t, tok), id, "key rotation")

	// The revocation endpoint takes the new key's assertions too.
	r := s.do(t, http.MethodPost, s.auth+"/api/v1/oauth/revoke/", e2etest.Form(
		"token", tok, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
		"client_assertion", s.assertion(t, fresh, id)))
	if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("revoke: %d %q %v", r.status, r.body, r.header)
	}
	wantRefused(t, "new key's token after revocation", s.me(t, tok))
}
