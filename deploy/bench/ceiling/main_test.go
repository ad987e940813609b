package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

const (
	testIssuer   = "http://127.0.0.1:1"
	testAudience = "partner-api"
)

// startCeiling runs the ceiling (run, as the harness starts it) on its own
// redis-server (its registry has no key prefix) and returns its base URL,
// its keys and the Redis it uses.
func startCeiling(t *testing.T, pipelining string) (string, *accesstoken.KeySet, redis.UniversalClient) {
	t.Helper()
	rs := redistest.StartServer(t)
	dir := t.TempDir()
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	keysFile, bodyFile := filepath.Join(dir, "keys.json"), filepath.Join(dir, "me.json")
	if err := keys.WriteFile(keysFile); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bodyFile, []byte(`{"api_version":"1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"ceiling", "--addr", addr, "--body-file", bodyFile, "--keys", keysFile,
			"--issuer", testIssuer, "--audience", testAudience, "--autopipeline=" + pipelining},
			func(k string) string {
				if k == "REDIS_URL" {
					return rs.URL()
				}
				return ""
			}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	base := "http://" + addr
	testwait.Eventually(t, 10*time.Second, "the ceiling answers /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return base, keys, rdb
}

func do(t *testing.T, method, url, authorization, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestSign: POST /sign answers as the token endpoint does, with a token
// signed by the given keys for every scope, valid for accesstoken's
// lifetime.
func TestSign(t *testing.T) {
	base, keys, _ := startCeiling(t, "auto")
	status, h, body := do(t, http.MethodPost, base+"/sign", "Basic eDp5", "grant_type=client_credentials")
	if status != http.StatusOK || h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" ||
		h.Get("Content-Type") != jsonContentType || h.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("POST /sign: %d %v %s", status, h, body)
	}
	var got signedResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	scope := strings.Join(clients.AllScopes, " ")
	if got.TokenType != "Bearer" || got.ExpiresIn != int64(accesstoken.Lifetime/time.Second) || got.Scope != scope {
		t.Errorf("answer %+v, want a Bearer token for %q of %d s", got, scope, int64(accesstoken.Lifetime/time.Second))
	}
	claims, err := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: keys.Public()}, testIssuer, testAudience, nil).Verify(got.AccessToken)
	if err != nil {
		t.Fatalf("the signed token does not verify: %v", err)
	}
	if !clients.ValidClientID(claims.ClientID) || claims.Scope != scope {
		t.Errorf("claims %+v, want a client id of the real form and every scope", claims)
	}
}

// registryWithOrg returns the ceiling's registry (no key prefix) holding
// the organisation st-marys.
func registryWithOrg(t *testing.T, rdb redis.UniversalClient) *clients.Store {
	t.Helper()
	store := clients.NewStore(rdb, "", nil)
	if _, err := store.CreateOrg(context.Background(), clients.OrgSpec{Slug: "st-marys", Name: "St Mary's", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	return store
}

// TestAdmit: GET /admit answers the fixed body for a live token of a
// registered client and refuses what the resourceserver refuses (no
// token, a bad one, a revoked client's), with pipelining on and off.
func TestAdmit(t *testing.T) {
	for _, pipelining := range []string{"true", "false"} {
		t.Run("autopipeline="+pipelining, func(t *testing.T) {
			base, keys, rdb := startCeiling(t, pipelining)
			ctx := context.Background()
			store := registryWithOrg(t, rdb)
			c, _, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "st-marys", Name: "St Mary's EHR", Audience: clients.AudienceHospital, Scopes: clients.AllScopes})
			if err != nil {
				t.Fatal(err)
			}
			issuer, err := accesstoken.NewIssuer(keys, testIssuer, testAudience)
			if err != nil {
				t.Fatal(err)
			}
			tok, _, err := issuer.Issue(accesstoken.Grant{ClientID: c.ID, Scope: "patients.read", Generation: c.Generation,
				SecretID: c.Secrets[len(c.Secrets)-1].ID, Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if status, _, body := do(t, http.MethodGet, base+"/admit", "Bearer "+tok, ""); status != http.StatusOK || string(body) != `{"api_version":"1"}` {
				t.Errorf("a live token: %d %s, want 200 and the body file", status, body)
			}
			for what, auth := range map[string]string{"no token": "", "a bad token": "Bearer " + tok[:len(tok)-4] + "AAAA"} {
				if status, _, body := do(t, http.MethodGet, base+"/admit", auth, ""); status != http.StatusUnauthorized {
					t.Errorf("%s: %d %s, want 401", what, status, body)
				}
			}
			if _, err := store.Revoke(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			if status, _, body := do(t, http.MethodGet, base+"/admit", "Bearer "+tok, ""); status != http.StatusUnauthorized || !strings.Contains(string(body), "revoked") {
				t.Errorf("a revoked client's token: %d %s, want 401 (revoked)", status, body)
			}
		})
	}
}

// TestAuthFloors: POST /authsign signs a token for the client its HTTP
// Basic credentials authenticate (its generation, secret id and every scope
// it holds) and refuses a wrong secret; POST /authcheck describes a live
// token of its caller field for field as introspection does, and answers
// {"active":false} for another client's token and a tampered one; with
// pipelining on and off.
func TestAuthFloors(t *testing.T) {
	for _, pipelining := range []string{"true", "false"} {
		t.Run("autopipeline="+pipelining, func(t *testing.T) {
			base, keys, rdb := startCeiling(t, pipelining)
			ctx := context.Background()
			store := registryWithOrg(t, rdb)
			scopes := []string{"patients.read", "referrals.write"}
			var ids, basics []string
			for _, name := range []string{"St Mary's EHR", "St Mary's Lab"} {
				c, secret, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "st-marys", Name: name, Audience: clients.AudienceHospital, Scopes: scopes})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, c.ID)
				basics = append(basics, "Basic "+base64.StdEncoding.EncodeToString([]byte(c.ID+":"+secret)))
			}
			status, h, body := do(t, http.MethodPost, base+"/authsign", basics[0], "grant_type=client_credentials")
			if status != http.StatusOK || h.Get("Cache-Control") != "no-store" || h.Get("Content-Type") != jsonContentType {
				t.Fatalf("POST /authsign: %d %v %s", status, h, body)
			}
			var got signedResponse
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			claims, err := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: keys.Public()}, testIssuer, testAudience, nil).Verify(got.AccessToken)
			if err != nil {
				t.Fatalf("the signed token does not verify: %v", err)
			}
			if claims.ClientID != ids[0] || claims.Scope != "patients.read referrals.write" || claims.Generation != 1 || got.Scope != claims.Scope {
				t.Errorf("claims %+v (answer %+v), want client %s with its two scopes at generation 1", claims, got, ids[0])
			}
			wrong := "Basic " + base64.StdEncoding.EncodeToString([]byte(ids[0]+":"+"cs_live_wrong"))
			if status, _, body := do(t, http.MethodPost, base+"/authsign", wrong, "grant_type=client_credentials"); status != http.StatusUnauthorized || string(body) != `{"error":"invalid_client"}` {
				t.Errorf("a wrong secret: %d %s, want 401 invalid_client", status, body)
			}

			status, _, body = do(t, http.MethodPost, base+"/authcheck", basics[0], "token="+got.AccessToken+"&token_type_hint=access_token")
			want := fmt.Sprintf(`{"active":true,"scope":"patients.read referrals.write","client_id":%q,"token_type":"Bearer","exp":%d,"iat":%d,"sub":%q,"aud":%q,"iss":%q,"jti":%q}`,
				ids[0], claims.ExpiresAt, claims.IssuedAt, ids[0], testAudience, testIssuer, claims.ID)
			if status != http.StatusOK || string(body) != want {
				t.Errorf("POST /authcheck of the caller's token: %d %s, want 200 %s", status, body, want)
			}
			for what, auth := range map[string]string{"another client's token": basics[1], "a tampered token": basics[0]} {
				tok := got.AccessToken
				if what == "a tampered token" {
					tok = tok[:len(tok)-4] + "AAAA"
				}
				if status, _, body := do(t, http.MethodPost, base+"/authcheck", auth, "token="+tok); status != http.StatusOK || string(body) != `{"active":false}` {
					t.Errorf("%s: %d %s, want 200 {\"active\":false}", what, status, body)
				}
			}
			if status, _, body := do(t, http.MethodPost, base+"/authcheck", wrong, "token="+got.AccessToken); status != http.StatusUnauthorized {
				t.Errorf("a caller with a wrong secret: %d %s, want 401", status, body)
			}
		})
	}
}
