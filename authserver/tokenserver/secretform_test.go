package tokenserver

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestSecretChecksumRefusedBeforeLookup: a secret whose checksum fails, or
// that has not the form of one, is answered exactly as a wrong secret,
// without reading the client, and counts against the address's ceiling of
// failed requests.
func TestSecretChecksumRefusedBeforeLookup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withTrust("127.0.0.1/32"), withCeiling(4))
	from := func(addr string) func(*http.Request) { return header("X-Forwarded-For", addr) }
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	last := secret[len(secret)-1]
	flipped := secret[:len(secret)-1] + map[bool]string{true: "B", false: "A"}[last == 'A']
	legacy := "svc_cs_" + strings.Repeat("Ab-_9", 8) + "xyz"

	wrong := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, clients.NewSecret()), from("192.0.2.1"))
	wantStatus(t, wrong, http.StatusUnauthorized)
	checks := e.checked()
	for i, bad := range []string{flipped, legacy, "svc_cs_wrong", secret[:len(secret)-1], secret + "0", ""} {
		r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, bad), from("192.0.2.2"))
		if i < 4 {
			wantStatus(t, r, http.StatusUnauthorized)
			wantJSON(t, r, string(wrong.Body))
			wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": basicChallenge}))
			continue
		}
		// Past the ceiling of 4: the failures were counted.
		wantStatus(t, r, http.StatusTooManyRequests)
		wantJSON(t, r, bodyBlocked)
	}
	if got := e.checked(); got != checks {
		t.Errorf("%d secret comparisons for refused secrets, want 0: the registry was read", got-checks)
	}
	if logs := e.logs.String(); !strings.Contains(logs, `"secret_checksum_failed":true`) || strings.Contains(logs, flipped) {
		t.Errorf("access records lack secret_checksum_failed, or hold the secret:\n%s", logs)
	}
	// The ceiling never refuses valid credentials.
	tokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), from("192.0.2.2")), clients.ScopeEventsSubscribe)
	// Introspection refuses them the same way.
	r := post(t, e.url+PathIntrospect, formType, form("token", "x"), basic(id, flipped), from("192.0.2.3"))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	tokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), from("192.0.2.3")), clients.ScopeEventsSubscribe)
}

// TestLegacySecrets: a client whose secret was issued before checksums is
// refused unless the operator accepts legacy secrets; then it gets tokens
// and its access records say legacy_secret, until it is rotated.
func TestLegacySecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, _ := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	legacy := "svc_cs_" + strings.Repeat("Ab-_9", 8) + "xyz" // the old form: 43 base64url characters
	d := clients.DigestOf(legacy)
	if err := e.rdb.HSet(context.Background(), e.prefix+"{"+id+"}:client", "secret_digest", hex.EncodeToString(d[:])).Err(); err != nil {
		t.Fatal(err)
	}
	r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, legacy))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)

	e.legacy = true
	lenient, _ := e.start(e.keys)
	tokenReply(t, post(t, lenient+PathToken, formType, form("grant_type", "client_credentials"), basic(id, legacy)), clients.ScopeEventsSubscribe)
	if logs := e.logs.String(); !strings.Contains(logs, `"legacy_secret":true`) || strings.Contains(logs, legacy) {
		t.Errorf("access record lacks legacy_secret, or holds the secret:\n%s", logs)
	}
	// Still a wrong legacy-form secret is a wrong secret.
	wantStatus(t, post(t, lenient+PathToken, formType, form("grant_type", "client_credentials"), basic(id, legacy[:len(legacy)-1]+"-")), http.StatusUnauthorized)
	// After rotation the new, checksummed secret works everywhere.
	_, fresh, err := e.store.RotateSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{e.url, lenient} {
		tokenReply(t, post(t, base+PathToken, formType, form("grant_type", "client_credentials"), basic(id, fresh)), clients.ScopeEventsSubscribe)
		wantStatus(t, post(t, base+PathToken, formType, form("grant_type", "client_credentials"), basic(id, legacy)), http.StatusUnauthorized)
	}
}
