package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local: "+err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet()
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (127.0.0.1:0 picks a free port)")
	keysFile := fs.String("keys", "", "signing key set file (default: fresh keys in memory)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	logger, err := logging.New(stderr, *logLevel)
	if err != nil {
		return err
	}

	redisURL := getenv("REDIS_URL")
	if redisURL == "" {
		// The in-process Redis is the laptop default, never CI's: there a
		// missing Redis must fail, not be papered over.
		if getenv("CI") == "true" {
			return errors.New("CI=true: set REDIS_URL; the in-process Redis is for local use only")
		}
		emb, err := redisconn.StartEmbedded()
		if err != nil {
			return err
		}
		defer emb.Close()
		redisURL = emb.URL()
	}
	rdb, err := redisconn.Open(redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := redisconn.Ping(ctx, rdb, 3*time.Second); err != nil {
		return fmt.Errorf("cannot reach Redis (REDIS_URL): %v", err)
	}

	keys, err := loadOrGenerateKeys(*keysFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (try --addr 127.0.0.1:0)", *addr, err)
	}
	base := "http://" + ln.Addr().String()
	prefix := getenv("REDIS_KEY_PREFIX")
	store := clients.NewStore(rdb, prefix, nil)

	auth, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: base, Audience: "partner-api", KeyPrefix: prefix},
		tokenserver.Deps{
			Registry: store, Keys: keys,
			Ready: func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) },
		})
	if err != nil {
		ln.Close()
		return err
	}
	docs, err := apidocs.New(base)
	if err != nil {
		ln.Close()
		return err
	}
	res := api.NewServer(logger, api.Config{Issuer: base, Audience: "partner-api"},
		api.Deps{Clients: store, Keys: accesstoken.StaticKeys{Set: keys.Public()}, Docs: docs, Redis: rdb})

	org, seeded, err := store.SeedSandbox(ctx)
	if err != nil {
		ln.Close()
		return fmt.Errorf("seed sandbox: %w", err)
	}
	printWelcome(stdout, base, redisURL == getenv("REDIS_URL"), org, seeded)
	return httpserver.Serve(ctx, ln, edge(auth, res), logger)
}

// edge routes as deploy/Caddyfile does: the token service's paths to it,
// everything else to the resource server.
func edge(auth, res http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/oauth/") || strings.HasPrefix(r.URL.Path, "/.well-known/") {
			auth.ServeHTTP(w, r)
			return
		}
		res.ServeHTTP(w, r)
	})
}

func loadOrGenerateKeys(path string) (*accesstoken.KeySet, error) {
	if path != "" {
		return accesstoken.LoadKeySet(path)
	}
	k, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		return nil, err
	}
	return accesstoken.NewKeySet(k)
}

func printWelcome(w io.Writer, base string, realRedis bool, org clients.Org, seeded []clients.SeededClient) {
	where := "an in-process Redis (state is lost on exit; set REDIS_URL to use a real one)"
	if realRedis {
		where = "the Redis in REDIS_URL"
	}
	fmt.Fprintf(w, "Partner Integration API running at %s on %s\n\n", base, where)
	fmt.Fprintf(w, "Sandbox organisation %s (%s): demo data only, never real patients.\n", org.Slug, org.Name)
	var first *clients.SeededClient
	for i, s := range seeded {
		fmt.Fprintf(w, "  %-12s client_id=%s", s.Client.Audience, s.Client.ID)
		if s.Secret != "" {
			fmt.Fprintf(w, " client_secret=%s", s.Secret)
			if first == nil {
				first = &seeded[i]
			}
		}
		fmt.Fprintln(w)
	}
	if first != nil {
		fmt.Fprintf(w, "\nGet a token (%s client):\n", first.Client.Audience)
		fmt.Fprintf(w, "  curl -s -u '%s:%s' -d grant_type=client_credentials %s/api/v1/oauth/token/\n", first.Client.ID, first.Secret, base)
		fmt.Fprintf(w, "\nCall the API with it:\n")
		fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $TOKEN\" %s/api/v1/me/\n", base)
		fmt.Fprintf(w, "\nOr both at once:\n")
		fmt.Fprintf(w, "  TOKEN=$(curl -s -u '%s:%s' -d grant_type=client_credentials %s/api/v1/oauth/token/ | sed -E 's/.*\"access_token\":\"([^\"]+)\".*/\\1/')\n", first.Client.ID, first.Secret, base)
		fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $TOKEN\" %s/api/v1/me/\n", base)
	}
	fmt.Fprintf(w, "\nDocs: %s/llms.txt  OpenAPI: %s/api/v1/schema/?format=json\nPress Ctrl-C to stop.\n", base, base)
}
