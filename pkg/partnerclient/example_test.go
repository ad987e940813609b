package partnerclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"time"

	"golang.org/x/oauth2"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// A Client gets, caches and renews the token itself; Me is a typed call.
func ExampleNew() {
	c, err := partnerclient.New(partnerclient.Config{
		BaseURL:      "https://api.example.com",
		ClientID:     os.Getenv("PARTNER_CLIENT_ID"),
		ClientSecret: os.Getenv("PARTNER_CLIENT_SECRET"),
	})
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Me(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(me.Organization.Slug, me.Environment, me.Scopes)
}

// NewHTTPClient is an *http.Client for any endpoint: it adds the bearer
// token and retries 401 (once), 429 and 5xx as the API recommends.
func ExampleNewHTTPClient() {
	hc, err := partnerclient.NewHTTPClient(partnerclient.Config{
		BaseURL:      "https://api.example.com",
		ClientID:     os.Getenv("PARTNER_CLIENT_ID"),
		ClientSecret: os.Getenv("PARTNER_CLIENT_SECRET"),
		MaxWait:      10 * time.Second, // do not wait out a longer Retry-After
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := hc.Get("https://api.example.com/api/v1/me/")
	if err != nil {
		log.Fatal(err) // no token (a *partnerclient.TokenError) or no connection
	}
	if err := partnerclient.CheckResponse(resp); err != nil {
		log.Fatal(err) // a *partnerclient.APIError with the API's detail
	}
	defer resp.Body.Close()
}

// A TokenSource is an oauth2.TokenSource: it plugs into code written for
// golang.org/x/oauth2, and renews 60 s before expiry instead of 10 s.
func ExampleNewTokenSource() {
	ts, err := partnerclient.NewTokenSource(partnerclient.Config{
		TokenURL:     "https://api.example.com/api/v1/oauth/token/",
		ClientID:     os.Getenv("PARTNER_CLIENT_ID"),
		ClientSecret: os.Getenv("PARTNER_CLIENT_SECRET"),
		AuthStyle:    partnerclient.AuthForm, // client_secret_post; the default is HTTP Basic
	})
	if err != nil {
		log.Fatal(err)
	}
	var src oauth2.TokenSource = ts
	tok, err := src.Token()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.TokenType, tok.Expiry)
}

// With private_key_jwt the client holds a private key instead of a secret:
// every token request carries a fresh JWT signed with it (RFC 7523 section
// 2.2). ParsePrivateJWK reads the key, its kid and its alg from a private
// JWK; any crypto.Signer (a KMS or HSM key) works as PrivateKey too.
func ExampleParsePrivateJWK() {
	data, err := os.ReadFile(os.Getenv("PARTNER_PRIVATE_JWK_FILE")) // {"kty":"EC","crv":"P-256","kid":"...","x":...,"y":...,"d":...}
	if err != nil {
		log.Fatal(err)
	}
	jwk, err := partnerclient.ParsePrivateJWK(data)
	if err != nil {
		log.Fatal(err)
	}
	c, err := partnerclient.New(partnerclient.Config{
		BaseURL:    "https://api.example.com",
		ClientID:   os.Getenv("PARTNER_CLIENT_ID"),
		PrivateKey: jwk.Key,
		KeyID:      jwk.KeyID,
		Algorithm:  jwk.Algorithm, // ES256, ES384, RS256, RS384, PS256 or EdDSA
	})
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Me(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(me.ClientID)
}

// RevokeCached revokes the cached token at the revocation endpoint (RFC
// 7009) and drops it: a client shutting down ends its token's life instead
// of leaving it valid until it expires.
func ExampleTokenSource_RevokeCached() {
	c, err := partnerclient.New(partnerclient.Config{
		BaseURL:      "https://api.example.com",
		ClientID:     os.Getenv("PARTNER_CLIENT_ID"),
		ClientSecret: os.Getenv("PARTNER_CLIENT_SECRET"),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	defer func() {
		if err := c.TokenSource().RevokeCached(ctx); err != nil {
			log.Print(err) // a *partnerclient.TokenError: "partnerclient: revocation request failed: ..."
		}
	}()
	if _, err := c.Me(ctx); err != nil {
		log.Fatal(err)
	}
}

// Errors carry the OAuth error or the API's detail, the status and
// Retry-After, and work with errors.As through the *url.Error that
// http.Client wraps around them.
func ExampleTokenError() {
	var err error = &url.Error{Op: "Get", URL: "https://api.example.com/api/v1/me/", Err: &partnerclient.TokenError{
		StatusCode: http.StatusUnauthorized, Code: "invalid_client", Description: "Client authentication failed",
	}}
	var te *partnerclient.TokenError
	if errors.As(err, &te) && te.Code == "invalid_client" {
		fmt.Println("the secret was rotated or the client revoked:", te.StatusCode)
	}
	fmt.Println(err)
	// Output:
	// the secret was rotated or the client revoked: 401
	// Get "https://api.example.com/api/v1/me/": partnerclient: token request failed: 401 invalid_client: Client authentication failed
}

// A Config prints, formats and logs without its secret.
func ExampleConfig_String() {
	cfg := partnerclient.Config{BaseURL: "https://api.example.com", ClientID: "svc_abcdefghijklmnopqrstuvwx", ClientSecret: "svc_cs_not-a-real-one"}
	fmt.Println(cfg)
	fmt.Printf("%#v\n", cfg)
	// Output:
	// partnerclient.Config{BaseURL: "https://api.example.com", TokenURL: "https://api.example.com/api/v1/oauth/token/", ClientID: "svc_abcdefghijklmnopqrstuvwx", ClientSecret: (redacted), Scopes: []}
	// partnerclient.Config{BaseURL: "https://api.example.com", TokenURL: "https://api.example.com/api/v1/oauth/token/", ClientID: "svc_abcdefghijklmnopqrstuvwx", ClientSecret: (redacted), Scopes: []}
}
