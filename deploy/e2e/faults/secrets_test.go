package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestSecretsStaySecret (point 6) runs a whole journey through both servers
// with their logs captured (and net/http's own error log): create a client,
// get tokens with Basic, form and JSON credentials, call /me, introspect,
// rotate the secret, see the old token and secret refused, revoke, and a
// string of failures that put a secret or a token where it does not
// belong. No secret, no "svc_cs_" at all and no whole access token (nor its
// signature) may appear in any log. Then every Redis key under the
// service's prefix, and every value of every type, is read: no secret and
// no token appear, and the secret is present only as its SHA-256 digest.
func TestSecretsStaySecret(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	c, secret1, err := s.store.CreateClient(ctx, clients.ClientSpec{
		OrgSlug: "acme", Name: "journey", Audience: clients.AudienceHospital, Scopes: clients.AllScopes,
	})
	if err != nil {
		t.Fatal(err)
	}
	id := c.ID
	var secrets, tokens []string
	secrets = append(secrets, secret1)
	want := func(r reply, status int, what string) reply {
		t.Helper()
		if r.Status != status {
			t.Fatalf("%s: status %d, want %d; %s", what, r.Status, status, r.Body)
		}
		return r
	}
	tokenOf := func(r reply) string {
		t.Helper()
		tok := accessToken(t, r)
		tokens = append(tokens, tok)
		return tok
	}
	client := from("198.51.100.40")

	// Tokens, three ways of authenticating.
	t1 := tokenOf(s.post(pathToken, formType, grant, basic(id, secret1), client))
	t2 := tokenOf(s.post(pathToken, formType, form("grant_type", "client_credentials", "client_id", id, "client_secret", secret1, "scope", "patients.read"), client))
	tokenOf(s.post(pathToken, jsonType, fmt.Sprintf(`{"grant_type":"client_credentials","client_id":%q,"client_secret":%q}`, id, secret1), client))
	want(s.get(pathMe, bearer(t1), client), http.StatusOK, "/me")
	if m := want(s.post(pathIntrospect, formType, form("token", t2), basic(id, secret1), client), http.StatusOK, "introspect").json(t); m["active"] != true {
		t.Fatalf("introspection of a live token: %v", m)
	}

	// Rotation: the old token and the old secret die, the new ones work.
	_, secret2, err := s.store.RotateSecret(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, secret2)
	want(s.get(pathMe, bearer(t1), client), http.StatusUnauthorized, "old token after rotation")
	want(s.post(pathToken, formType, grant, basic(id, secret1), client), http.StatusUnauthorized, "old secret after rotation")
	t4 := tokenOf(s.post(pathToken, formType, grant, basic(id, secret2), client))
	want(s.get(pathMe, bearer(t4), client), http.StatusOK, "/me with the new token")

	// Redis after create and rotate: only digests.
	scanRedis(t, s, secrets, tokens, secret2)

	// Failures with a secret or a token in the wrong place.
	for _, f := range []struct {
		name   string
		r      reply
		status int
	}{
		{"secret as client_id (form)", s.post(pathToken, formType, form("grant_type", "client_credentials", "client_id", secret2, "client_secret", secret2), client), http.StatusUnauthorized},
		{"secret as the Basic user", s.post(pathToken, formType, grant, basic(secret2, secret2), client), http.StatusUnauthorized},
		{"secret and id swapped", s.post(pathToken, formType, grant, basic(secret2, id), client), http.StatusUnauthorized},
		{"old secret as client_id (JSON)", s.post(pathToken, jsonType, fmt.Sprintf(`{"grant_type":"client_credentials","client_id":%q,"client_secret":"x"}`, secret1), client), http.StatusUnauthorized},
		{"secret as the scope", s.post(pathToken, formType, form("grant_type", "client_credentials", "scope", secret2), basic(id, secret2), client), http.StatusBadRequest},
		{"secret as the grant type", s.post(pathToken, formType, form("grant_type", secret2), basic(id, secret2), client), http.StatusBadRequest},
		{"secret as a repeated parameter", s.post(pathToken, formType, form("grant_type", "client_credentials", "x", secret2, "x", secret2), basic(id, secret2), client), http.StatusBadRequest},
		{"secret inside a JSON array", s.post(pathToken, jsonType, `{"grant_type":"client_credentials","client_secret":["`+secret2+`"]}`, client), http.StatusBadRequest},
		{"secret in a malformed Basic header", s.post(pathToken, formType, grant, header("Authorization", "Basic "+secret2), client), http.StatusBadRequest},
		{"secret as a Bearer token at /me", s.get(pathMe, bearer(secret2), client), http.StatusUnauthorized},
		{"secret as a Bearer token on the token endpoint", s.post(pathToken, formType, grant, bearer(secret2), client), http.StatusUnauthorized},
		{"secret in the query at /me", s.get(pathMe+"?access_token="+secret2, client), http.StatusBadRequest},
		{"token as client_id", s.post(pathToken, formType, form("grant_type", "client_credentials", "client_id", t4, "client_secret", secret2), client), http.StatusUnauthorized},
		{"token as the Basic password", s.post(pathToken, formType, grant, basic(id, t4), client), http.StatusUnauthorized},
		{"token in the query at /me", s.get(pathMe+"?access_token="+t4, client), http.StatusBadRequest},
		{"token twice at /me", s.get(pathMe, bearer(t4), bearer(t4), client), http.StatusBadRequest},
		{"token tampered at /me", s.get(pathMe, bearer(t4+"x"), client), http.StatusUnauthorized},
		{"token introspected by the wrong secret", s.post(pathIntrospect, formType, form("token", t4), basic(id, secret1), client), http.StatusUnauthorized},
	} {
		if f.r.Status != f.status {
			t.Errorf("%s: status %d, want %d; %s", f.name, f.r.Status, f.status, f.r.Body)
		}
	}
	// A secret in X-Request-Id from an address that is not a trusted proxy
	// (it would be believed from the edge, which sets its own id).
	req := httptest.NewRequest(http.MethodPost, pathToken, strings.NewReader(grant))
	req.Header.Set("Content-Type", formType)
	req.Header.Set("X-Request-Id", secret2)
	req.RemoteAddr = "203.0.113.50:1234"
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	if rec.Header().Get("X-Request-Id") == secret2 {
		t.Errorf("an untrusted client's X-Request-Id was echoed")
	}

	// Revocation ends it all.
	if _, err := s.store.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	want(s.get(pathMe, bearer(t4), client), http.StatusUnauthorized, "token after revocation")
	want(s.post(pathToken, formType, grant, basic(id, secret2), client), http.StatusUnauthorized, "secret after revocation")
	want(s.post(pathIntrospect, formType, form("token", t4), basic(id, secret2), client), http.StatusUnauthorized, "introspection after revocation")

	// The logs: records of the journey, and no secret or token in them.
	logs := map[string]string{"token service": s.authLogs.String(), "resource server": s.resLogs.String(), "net/http": s.serverLogs.String()}
	if !strings.Contains(logs["token service"], `"client_id":"`+id+`"`) || !strings.Contains(logs["resource server"], `"client_id":"`+id+`"`) {
		t.Fatalf("the logs did not capture the journey:\n%s\n%s", logs["token service"], logs["resource server"])
	}
	leaks := 0
	for name, l := range logs {
		for _, sec := range secrets {
			if strings.Contains(l, sec) {
				leaks++
				t.Errorf("a client secret is in the %s log", name)
			}
		}
		if strings.Contains(l, clients.SecretPrefix) {
			leaks++
			t.Errorf("%q appears in the %s log", clients.SecretPrefix, name)
		}
		for _, tok := range tokens {
			if strings.Contains(l, tok) || strings.Contains(l, segments(tok)[2]) {
				leaks++
				t.Errorf("an access token (or its signature) is in the %s log", name)
			}
		}
	}
	records := strings.Count(logs["token service"], "\n") + strings.Count(logs["resource server"], "\n")
	t.Logf("journey: %d log records, %d secrets and %d tokens searched for, %d leaks", records, len(secrets), len(tokens), leaks)
}

// scanRedis reads every key under the stack's prefix with the command its
// type needs and checks that no secret and no token is anywhere in a key
// or a value, and that the current secret's SHA-256 digest is (the stored
// form), while the rotated-out secret's digest is gone.
func scanRedis(t *testing.T, s *stack, secrets, tokens []string, current string) {
	t.Helper()
	ctx := context.Background()
	var dump strings.Builder
	keys := keysUnder(t, s.rdb, s.prefix)
	for _, k := range keys {
		dump.WriteString(k + "\n")
		typ, err := s.rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "string":
			dump.WriteString(s.rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range s.rdb.HGetAll(ctx, k).Val() {
				dump.WriteString(f + "=" + v + "\n")
			}
		case "list":
			dump.WriteString(strings.Join(s.rdb.LRange(ctx, k, 0, -1).Val(), "\n"))
		case "set":
			dump.WriteString(strings.Join(s.rdb.SMembers(ctx, k).Val(), "\n"))
		case "zset":
			for _, z := range s.rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				fmt.Fprintf(&dump, "%v %v\n", z.Member, z.Score)
			}
		case "stream":
			for _, m := range s.rdb.XRange(ctx, k, "-", "+").Val() {
				fmt.Fprintf(&dump, "%s %v\n", m.ID, m.Values)
			}
		default:
			t.Errorf("key %s of unexpected type %s", k, typ)
		}
		dump.WriteString("\n")
	}
	all := dump.String()
	for i, sec := range secrets {
		if strings.Contains(all, sec) || strings.Contains(all, strings.TrimPrefix(sec, clients.SecretPrefix)) {
			t.Errorf("secret %d is stored in Redis", i)
		}
	}
	if strings.Contains(all, clients.SecretPrefix) {
		t.Errorf("%q appears in Redis", clients.SecretPrefix)
	}
	for _, tok := range tokens {
		if strings.Contains(all, segments(tok)[2]) {
			t.Errorf("an access token is stored in Redis")
		}
	}
	// The record holds the digest raw (32 bytes); the hex form must not be
	// anywhere either.
	digest := func(sec string) string { d := sha256.Sum256([]byte(sec)); return string(d[:]) }
	hexDigest := func(sec string) string { d := sha256.Sum256([]byte(sec)); return hex.EncodeToString(d[:]) }
	if !strings.Contains(all, digest(current)) {
		t.Errorf("the current secret's SHA-256 digest is not in Redis")
	}
	for _, sec := range secrets {
		if sec != current && (strings.Contains(all, digest(sec)) || strings.Contains(all, hexDigest(sec))) {
			t.Errorf("a rotated-out secret's digest is still in Redis")
		}
	}
	t.Logf("Redis after create and rotate: %d keys, %d bytes of keys and values read; the secret only as its digest", len(keys), len(all))
}
