// Command example is the partner SDK's runnable example: it gets a token
// with the client credentials grant and calls GET /api/v1/me/ through
// package partnerclient, then shows that a second call reuses the cached
// token; with --revoke it then revokes the token (RFC 7009).
//
// From the repository's root (the SDK is a module of its own, which the
// root module requires):
//
//	PARTNER_CLIENT_SECRET=svc_cs_... go run github.com/partnerapi/authplatform/pkg/partnerclient/example \
//	    --base-url http://127.0.0.1:8000 --client-id svc_...
//
// or, from pkg/partnerclient, go run ./example with the same flags.
//
// The secret is read from the environment only (a flag would show in the
// process list). With --private-key FILE --key-id KID the client
// authenticates with private_key_jwt (RFC 7523) instead: FILE holds the
// private key as PEM (PKCS #8 as `openssl genpkey` writes it, SEC 1 or
// PKCS #1; the authentication guide's recipe), KID the "kid" of its public
// key registered for the client. --private-jwk FILE does the same with a
// private JWK holding its "kid". Flags and their environment variables:
// --base-url (PARTNER_API_BASE_URL), --client-id (PARTNER_CLIENT_ID),
// --private-key (PARTNER_PRIVATE_KEY_FILE), --key-id (PARTNER_KEY_ID),
// --private-jwk (PARTNER_PRIVATE_JWK_FILE), --revoke.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", getenv("PARTNER_API_BASE_URL"), "the API's base URL")
	clientID := fs.String("client-id", getenv("PARTNER_CLIENT_ID"), "the client id (svc_...)")
	jwkFile := fs.String("private-jwk", getenv("PARTNER_PRIVATE_JWK_FILE"), "a file holding the client's private JWK: private_key_jwt instead of PARTNER_CLIENT_SECRET")
	keyFile := fs.String("private-key", getenv("PARTNER_PRIVATE_KEY_FILE"), "a file holding the client's private key as PEM (with --key-id): private_key_jwt instead of PARTNER_CLIENT_SECRET")
	keyID := fs.String("key-id", getenv("PARTNER_KEY_ID"), "the kid of the public key registered for --private-key")
	revoke := fs.Bool("revoke", false, "revoke the token at the end (RFC 7009)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg := partnerclient.Config{
		BaseURL: *baseURL, ClientID: *clientID,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	switch {
	case *keyFile != "" && *jwkFile != "":
		return errors.New("give --private-key or --private-jwk, not both")
	case *keyFile != "":
		data, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		k, err := partnerclient.ParsePrivateKeyPEM(data)
		if err != nil {
			return err
		}
		cfg.PrivateKey, cfg.KeyID, cfg.Algorithm = k.Key, *keyID, k.Algorithm
	case *jwkFile != "":
		data, err := os.ReadFile(*jwkFile)
		if err != nil {
			return err
		}
		jwk, err := partnerclient.ParsePrivateJWK(data)
		if err != nil {
			return err
		}
		cfg.PrivateKey, cfg.KeyID, cfg.Algorithm = jwk.Key, jwk.KeyID, jwk.Algorithm
	default:
		cfg.ClientSecret = getenv("PARTNER_CLIENT_SECRET")
	}
	c, err := partnerclient.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	me, err := c.Me(ctx)
	var te *partnerclient.TokenError
	var ae *partnerclient.APIError
	switch {
	case errors.As(err, &te) && te.Code == "invalid_client":
		return fmt.Errorf("the token endpoint refused the client's credentials (rotated or revoked?): %w", err)
	case errors.As(err, &ae):
		return fmt.Errorf("the API answered %d: %s", ae.StatusCode, ae.Detail)
	case err != nil:
		return err
	}
	tok, err := c.TokenSource().TokenContext(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "client:       %s (%s)\n", me.ClientID, me.Name)
	fmt.Fprintf(stdout, "organisation: %s (%s), %s\n", me.Organization.Name, me.Organization.Slug, me.Environment)
	fmt.Fprintf(stdout, "audience:     %s\n", me.Audience)
	fmt.Fprintf(stdout, "scopes:       %q\n", me.Scopes)
	fmt.Fprintf(stdout, "rate limit:   %d requests per minute\n", me.RateLimitPerMinute)
	fmt.Fprintf(stdout, "token:        svc_at_… (%d characters), expires %s, renewed from %s\n",
		len(tok.AccessToken), tok.Expiry.UTC().Format(time.RFC3339), tok.Expiry.Add(-partnerclient.DefaultRenewBefore).UTC().Format(time.RFC3339))

	again, err := c.TokenSource().TokenContext(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Me(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "second call:  token reused from the cache: %v\n", again.AccessToken == tok.AccessToken)
	if *revoke {
		if err := c.TokenSource().RevokeCached(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked:      the token is revoked and dropped from the cache")
	}
	return nil
}
