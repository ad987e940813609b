package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/console"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local: "+err.Error())
		os.Exit(cli.ExitCode(err, nil))
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet()
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (127.0.0.1:0 picks a free port)")
	adminAddr := fs.String("admin-addr", defaultAdminAddr, "listen address of the admin API, or off (127.0.0.1:0 picks a free port); loopback unless given")
	keysFile := fs.String("keys", "", "signing key set file (default: fresh keys in memory)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	nonces := fs.Bool("dpop-nonces", false, "require a server nonce in every DPoP proof (RFC 9449 section 9), as DPOP_NONCES=true does for the servers")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs)
			return nil
		}
		return cli.AsUsage(err)
	}
	*adminAddr = freeAlongside(fs, *addr, *adminAddr)
	logger, err := logging.New(stderr, *logLevel)
	if err != nil {
		return err
	}
	// go-redis has one process-wide logger (no per-client option in v9.23):
	// its lines join this program's JSON log, as in the servers.
	redisconn.SetLogger(logger)

	redisURL := getenv("REDIS_URL")
	if redisURL == "" {
		// The in-process Redis is the laptop default, never CI's: there a
		// missing Redis must fail, not be papered over.
		ci, err := cli.EnvBool(getenv, "CI", false)
		if err != nil {
			return err
		}
		if ci {
			return errors.New("CI=true: set REDIS_URL; the in-process Redis is for local use only")
		}
		emb, err := startEmbedded()
		if err != nil {
			return err
		}
		defer emb.close()
		redisURL = emb.url()
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
	// Both listeners are bound before anything is built: the issuer is
	// the API's address, a port 0 included.
	g := httpserver.NewGroup(logger, nil)
	apiAddr, err := g.Listen(httpserver.API, *addr)
	if err != nil {
		return fmt.Errorf("%w (try --addr 127.0.0.1:0)", err)
	}
	adminBound, err := g.Listen(httpserver.Admin, *adminAddr)
	if err != nil {
		g.Close()
		return fmt.Errorf("%w (try --admin-addr 127.0.0.1:0, or off)", err)
	}
	var shared *dpopnonce.Shared
	if *nonces {
		if shared, err = dpopnonce.SharedNonces(ctx, rdb, redisconn.KeyPrefix(getenv)); err != nil {
			g.Close()
			return err
		}
		go shared.Watch(ctx, logger)
	}
	if err := serveStack(ctx, g, logger, rdb, keys, stdout, welcome{
		base: "http://" + apiAddr.String(), redisURL: redisURL, realRedis: redisURL == getenv("REDIS_URL"),
		prefix: redisconn.KeyPrefix(getenv), nonces: shared != nil,
	}, adminBound, shared); err != nil {
		g.Close()
		return err
	}
	return nil
}

// defaultAdminAddr is the admin API's address unless --admin-addr says
// otherwise: loopback, as the token service's default.
const defaultAdminAddr = "127.0.0.1:8090"

// freeAlongside is the admin API's address: as given, or, when --admin-addr
// is left at its default and --addr asks for a free port (port 0), a free
// port too, so that a taken default never fails a start that asked for
// free ports. Either way it stays on loopback unless --admin-addr is
// given: --addr :0 puts the API on every interface, never the admin API.
func freeAlongside(fs *flag.FlagSet, addr, adminAddr string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "admin-addr" })
	if _, port, err := net.SplitHostPort(addr); !given && err == nil && port == "0" {
		return "127.0.0.1:0"
	}
	return adminAddr
}

// printUsage is the answer to -h: what the stack is, and its flags as the
// servers' help lists theirs (cli.PrintFlags).
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "usage: go run ./deploy/local [FLAGS]\n\n"+
		"Runs the token service, the resource server and the admin API in one process, the sandbox seeded,\n"+
		"on an in-process Redis unless REDIS_URL names one (deploy/docs/configuration.md).\n\nflags:\n")
	cli.PrintFlags(w, fs)
}

// serveStack builds the token service, the resource server and the admin
// API on the group's bound listeners, seeds the sandbox, prints the banner
// and serves until ctx ends.
//
// The public base URLs a DPoP proof's htu names (RFC 9449 section 4.3)
// are the listeners' own addresses, never a request's Host. nonces, when
// not nil, makes every DPoP proof need a server nonce (--dpop-nonces).
func serveStack(ctx context.Context, g *httpserver.Group, logger *slog.Logger, rdb redis.UniversalClient, keys *accesstoken.KeySet, stdout io.Writer, wl welcome, adminBound net.Addr, nonces *dpopnonce.Shared) error {
	base, prefix := wl.base, wl.prefix
	store := clients.NewStore(rdb, prefix, nil)
	ready := func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) }
	// One signing-key authority and one verifier over it for all three
	// servers of the process.
	authority, err := signingkeys.New(keys, base, "partner-api")
	if err != nil {
		return err
	}
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, base, "partner-api", nil), 0, nil)
	// A nil interface when nonces are off, never a nil *dpopnonce.Shared
	// in one (serverruntime.Runtime.Nonces says why).
	var shared admission.Nonces
	tdeps := tokenserver.Deps{Registry: store, Keys: authority, Tokens: verifier, Ready: ready}
	if nonces != nil {
		shared, tdeps.Nonces = nonces, nonces
	}
	auth, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: base, Audience: "partner-api"}, tdeps)
	if err != nil {
		return err
	}
	docs, err := apidocs.New(base)
	if err != nil {
		return err
	}
	res, err := api.NewServer(logger, api.Config{Issuer: base, Audience: "partner-api", PublicBaseURL: base},
		api.Deps{Registry: store, Keys: authority, Docs: docs, Ready: ready, Nonces: shared})
	if err != nil {
		return err
	}
	if wl.org, wl.seeded, err = store.SeedSandbox(ctx); err != nil {
		return fmt.Errorf("seed sandbox: %w", err)
	}
	g.Handle(httpserver.API, edge(auth, res))
	if adminBound != nil {
		ops := &operations.Service{Registry: store, Withdrawals: keywithdrawal.NewStore(rdb, prefix)}
		admin, err := adminapi.NewServer(logger, adminapi.Config{KeyPrefix: prefix, PublicBaseURL: "http://" + adminBound.String()}, adminapi.Deps{
			Ops: ops, Tokens: verifier, Admit: store, Keys: authority, Redis: rdb, Nonces: shared,
			Console: func(api http.Handler) (http.Handler, error) {
				return console.New(logger, console.Config{}, console.Deps{API: api, Token: auth, Tokens: verifier, Usage: ops})
			}})
		if err != nil {
			return err
		}
		g.Handle(httpserver.Admin, admin)
		wl.admin = "http://" + adminBound.String() + adminapi.Prefix
		wl.console = "http://" + adminBound.String() + console.Prefix
		// A first start (the sandbox's clients were just made) makes a
		// sandbox operator too, so that the console can be signed in to at
		// once; a restart makes none (its secret was shown once).
		if len(wl.seeded) > 0 && wl.seeded[0].Secret != "" {
			op, err := ops.CreateOperator(ctx, clients.OperatorSpec{Name: "local console"})
			if err != nil {
				return fmt.Errorf("create the console's operator: %w", err)
			}
			wl.operator = op
		}
	}
	printWelcome(stdout, wl)
	return g.Serve(ctx)
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

// welcome is what the banner tells.
type welcome struct {
	base      string
	redisURL  string
	realRedis bool   // REDIS_URL was given
	prefix    string // REDIS_KEY_PREFIX
	org       clients.Org
	seeded    []clients.SeededClient
	admin     string // the admin API's base URL ("": off)
	console   string // the console's URL ("": off)
	// operator is the sandbox operator made at a first start, with its
	// secret (none on a restart).
	operator operations.WithSecret
	nonces   bool // --dpop-nonces
}

// printWelcome prints the banner: where the stack runs, the sandbox clients,
// shell lines that work when pasted as printed (a token into $TOKEN, then
// /me), and how to manage the same registry with the operator CLI. On a
// restart against an existing registry the clients' secrets are not known
// (only hashes are stored): the lines then get a fresh one with
// `authserver clients rotate-secret`.
func printWelcome(w io.Writer, wl welcome) {
	where := "an in-process Redis (state is lost on exit; set REDIS_URL to use a real one)"
	if wl.realRedis {
		where = "the Redis in REDIS_URL"
	}
	fmt.Fprintf(w, "Partner Integration API running at %s on %s\n\n", wl.base, where)
	fmt.Fprintf(w, "Sandbox organisation %s (%s): demo data only, never real patients.\n", wl.org.Slug, wl.org.Name)
	for _, s := range wl.seeded {
		fmt.Fprintf(w, "  %-12s client_id=%s", s.Client.Audience, s.Client.ID)
		if s.Secret != "" {
			fmt.Fprintf(w, " client_secret=%s", s.Secret)
		} else {
			fmt.Fprint(w, " (existed already: its secret was shown once, when it was created)")
		}
		fmt.Fprintln(w)
	}
	// The CLI's environment: the same Redis and key prefix. A password in
	// a given REDIS_URL is not printed.
	cliEnv := "REDIS_URL=" + shellQuote(redactedURL(wl.redisURL))
	if wl.prefix != "" {
		cliEnv += " REDIS_KEY_PREFIX=" + shellQuote(wl.prefix)
	}
	if len(wl.seeded) > 0 {
		first := wl.seeded[0]
		fmt.Fprintf(w, "\nTry it (paste these lines into a shell; they need curl and sed):\n")
		fmt.Fprintf(w, "  CLIENT_ID=%s\n", first.Client.ID)
		if first.Secret != "" {
			fmt.Fprintf(w, "  CLIENT_SECRET=%s\n", first.Secret)
		} else {
			fmt.Fprintf(w, "  # the clients existed already: a new secret for %s (its old secret and tokens stop working)\n", first.Client.ID)
			fmt.Fprintf(w, "  CLIENT_SECRET=$(%s go run ./authserver clients rotate-secret \"$CLIENT_ID\" --json | sed -nE 's/.*\"client_secret\": \"([^\"]+)\".*/\\1/p')\n", cliEnv)
		}
		fmt.Fprintf(w, "  TOKEN=$(curl -s -u \"$CLIENT_ID:$CLIENT_SECRET\" -d grant_type=client_credentials %s/api/v1/oauth/token/ | sed -E 's/.*\"access_token\":\"([^\"]+)\".*/\\1/')\n", wl.base)
		fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $TOKEN\" %s/api/v1/me/\n", wl.base)
	}
	fmt.Fprintf(w, "\nManage this registry while it runs (operator CLI, from this repository):\n")
	fmt.Fprintf(w, "  export %s\n", cliEnv)
	fmt.Fprintf(w, "  go run ./authserver clients list --org %s\n", wl.org.Slug)
	fmt.Fprintf(w, "  go run ./authserver clients rotate-secret CLIENT_ID   # a new secret for a client\n")
	if redactedURL(wl.redisURL) != wl.redisURL {
		fmt.Fprintf(w, "REDIS_URL's password is shown as xxxxx: put yours back.\n")
	}
	if wl.admin != "" {
		fmt.Fprintf(w, "\nAdmin API at %s (OpenAPI: %s/openapi.json). A first operator, its token, a call:\n", wl.admin, wl.admin)
		fmt.Fprintf(w, "  OPERATOR=$(%s go run ./authserver operators create --name local --json)\n", cliEnv)
		fmt.Fprintf(w, "  OPERATOR_ID=$(echo \"$OPERATOR\" | sed -nE 's/.*\"client_id\": \"([^\"]+)\".*/\\1/p')\n")
		fmt.Fprintf(w, "  OPERATOR_SECRET=$(echo \"$OPERATOR\" | sed -nE 's/.*\"client_secret\": \"([^\"]+)\".*/\\1/p')\n")
		fmt.Fprintf(w, "  ADMIN_TOKEN=$(curl -s -u \"$OPERATOR_ID:$OPERATOR_SECRET\" -d grant_type=client_credentials %s/api/v1/oauth/token/ | sed -E 's/.*\"access_token\":\"([^\"]+)\".*/\\1/')\n", wl.base)
		fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $ADMIN_TOKEN\" %s/clients\n", wl.admin)
	}
	if wl.nonces {
		fmt.Fprintf(w, "\nDPoP server nonces are on (--dpop-nonces): every DPoP proof needs the DPoP-Nonce of an earlier answer.\n")
	}
	if wl.console != "" {
		fmt.Fprintf(w, "\nOperator console at %s\n", wl.console)
		if wl.operator.ClientSecret != "" {
			fmt.Fprintf(w, "  sign in with the sandbox operator's client id %s and secret %s\n", wl.operator.ID, wl.operator.ClientSecret)
		} else {
			fmt.Fprintf(w, "  sign in with an operator client: %s go run ./authserver operators create --name console\n", cliEnv)
		}
	}
	fmt.Fprintf(w, "\nDocs: %s/llms.txt  OpenAPI: %s/api/v1/schema/?format=json\nPress Ctrl-C to stop.\n", wl.base, wl.base)
}

// redactedURL hides a password in a Redis URL.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(REDIS_URL)"
	}
	return u.Redacted()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
