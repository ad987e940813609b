// Command ceiling is the bench harness's yardstick: the least a Gin server
// can do per request, measured like the real servers (its own process, its
// own CPU time and RSS) against the same requests.
//
//	ceiling --addr 127.0.0.1:PORT --body-file FILE --keys FILE --issuer URL --audience AUD
//	        [--autopipeline auto|true|false] [--pprof-addr 127.0.0.1:PORT]   (REDIS_URL names Redis)
//
// GET /bare answers the body of FILE (a real /api/v1/me/ body, so the same
// length) as application/json, with no middleware at all. GET /redis makes
// one Redis round trip (EVALSHA of "return 1", loaded once) and then answers
// the same body: the least any endpoint that consults Redis per request can
// cost. POST /sign is the token endpoint's floor: it reads the request's
// body, makes the same one Redis round trip, signs an access token with the
// authserver's own code and keys (pkg/accesstoken, --keys, --issuer and
// --audience as the authserver's, so the token is as long) and answers it
// as the token endpoint answers one (RFC 6749 section 5.1, no-store): the
// least an endpoint that signs a token and consults Redis once can cost,
// the floor issue 28 names (signature, HTTP, one round trip). GET /admit
// is GET /api/v1/me/'s floor: the resourceserver's bearer admission
// (pkg/admission: the token checked by the cached verifier, then the
// registry's admission script, with the resourceserver's pipelining
// setting, --autopipeline) and the same fixed body: what any endpoint of
// the API must do per request (RFC 6750 section 2.1, revocation and the
// per-client limit in Redis), without /me's answer, access record and
// metrics. POST /authsign is the token endpoint's floor with its client
// authentication: /sign with the one round trip made by the registry's
// authentication script (clients.Store.Authenticate, the secret from HTTP
// Basic, Token set: the failure accounting, the scope and the client's
// token limit the spec asks of every token request) instead of "return 1",
// and the token signed for the client and scope it granted. POST
// /authcheck is introspection's floor: the form's token verified by the
// cached verifier, then the caller authenticated with that token's
// standing read in the same round trip (Attempt.Check), and the token's
// claims answered as introspection answers an active one (RFC 7662 section
// 2.2, tokenserver.Introspection). Neither has the authserver's layers
// (request id, access record, metrics), its form parsing and error shapes,
// nor go-oauth2's Manager. GET /healthz answers 200 for the harness's
// start-up probe. --pprof-addr also serves the Go runtime's profiles on a
// listener of their own, as the servers do on their metrics listener with
// PPROF (httpserver.ProfileRoutes): the harness profiles the floors there
// (bench --profiles).
//
// The Redis client is the servers' own (pkg/redisconn), with the same pool.
// On a Cluster (a redis+cluster:// REDIS_URL, bench --redis-cluster) the
// script is loaded on every primary, and the EVALSHA, which names no key,
// goes to the primaries in turn (go-redis's default round-robin shard
// picker for keyless commands): the ceiling's Redis load is spread over
// the shards as the endpoints' per-client keys spread theirs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling: "+err.Error())
		os.Exit(1)
	}
}

// trivial is the script of /redis: one EVALSHA that touches no key.
var trivial = redis.NewScript("return 1")

const jsonContentType = "application/json; charset=utf-8"

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	bodyFile := fs.String("body-file", "", "the JSON body to answer (a real /api/v1/me/ body)")
	keysFile := fs.String("keys", "", "the authserver's signing keys (a JWK set file), for POST /sign")
	issuerName := fs.String("issuer", "", "the authserver's issuer, for POST /sign")
	audience := fs.String("audience", "", "the authserver's audience, for POST /sign")
	pprofAddr := fs.String("pprof-addr", "", "also serve the Go runtime's profiles (httpserver.ProfileRoutes) on this address, as the servers do on their metrics listener with PPROF (bench --profiles, --pgo-out)")
	var pipelining serveconfig.Pipelining
	fs.Var(&pipelining, "autopipeline", "the servers' REDIS_AUTOPIPELINE, for GET /admit, POST /authsign and POST /authcheck")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *bodyFile == "" || *keysFile == "" || *issuerName == "" || *audience == "" {
		return errors.New("--body-file, --keys, --issuer and --audience are required")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	keys, err := accesstoken.LoadKeySet(*keysFile)
	if err != nil {
		return err
	}
	issuer, err := accesstoken.NewIssuer(keys, *issuerName, *audience)
	if err != nil {
		return err
	}
	rdb, err := redisconn.Open(getenv("REDIS_URL"))
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := trivial.Load(ctx, rdb).Err(); err != nil {
		return fmt.Errorf("load script: %w", err)
	}
	// The resourceserver's admission, wired as resourceserver/serve.go
	// wires it, over the keys themselves (the resourceserver fetches the
	// same public keys from the JWKS); the same registry and verifier
	// serve the authserver's floors.
	registry := clients.NewStore(rdb, "", nil)
	if pipelining.On() {
		if err := registry.UseAutoPipeline(); err != nil {
			return err
		}
		defer registry.Close()
	}
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(accesstoken.StaticKeys{Set: keys.Public()}, *issuerName, *audience, nil), 0, nil)
	adm, err := admission.New(admission.Config{Clients: admission.Partners, RefuseQueryToken: true, PublicBaseURL: *issuerName}, verifier, registry)
	if err != nil {
		return err
	}

	if *pprofAddr != "" {
		pln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return err
		}
		// No WriteTimeout: a CPU profile is one answer as long as its
		// seconds.
		psrv := &http.Server{Handler: httpserver.NewRouter(httpserver.ProfileRoutes(), httpserver.DetailMisrouted), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = psrv.Serve(pln) }()
		defer psrv.Close()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(rdb, body, issuer, adm, floors{registry: registry, verifier: verifier}), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "ceiling listening on http://%s (%d-byte body)\n", ln.Addr(), len(body))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// signedResponse is the body of POST /sign: the token endpoint's 200
// answer (authserver/tokenserver's tokenResponse, RFC 6749 section 5.1).
type signedResponse struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
	TokenType   string `json:"token_type"`
}

// signedScope is the scope of POST /sign's tokens: the harness's clients
// hold every scope and are granted it all.
var signedScope = strings.Join(clients.AllScopes, " ")

func newHandler(rdb redis.Scripter, body []byte, issuer *accesstoken.Issuer, adm *admission.Admission, fl floors) http.Handler {
	clientID := clients.NewClientID() // as long as a real client's
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/healthz", func(c *gin.Context) { c.Data(http.StatusOK, jsonContentType, []byte(`{"status":"ok"}`)) })
	e.GET("/bare", func(c *gin.Context) { c.Data(http.StatusOK, jsonContentType, body) })
	e.GET("/redis", func(c *gin.Context) {
		if err := trivial.Run(c.Request.Context(), rdb, nil).Err(); err != nil {
			c.Data(http.StatusServiceUnavailable, jsonContentType, []byte(`{"detail":"redis unavailable"}`))
			return
		}
		c.Data(http.StatusOK, jsonContentType, body)
	})
	e.GET("/admit", func(c *gin.Context) {
		switch out := adm.Admit(c.Request.Context(), c.Request); out.Result {
		case admission.Admitted:
			c.Data(http.StatusOK, jsonContentType, body)
		case admission.Unavailable:
			c.Data(http.StatusServiceUnavailable, jsonContentType, []byte(`{"detail":"unavailable"}`))
		case admission.RateLimited:
			c.Data(http.StatusTooManyRequests, jsonContentType, []byte(`{"detail":"rate limited"}`))
		default:
			c.Data(http.StatusUnauthorized, jsonContentType, []byte(`{"detail":"`+out.Result.String()+`"}`))
		}
	})
	e.POST("/sign", func(c *gin.Context) {
		if _, err := io.ReadAll(io.LimitReader(c.Request.Body, 64<<10)); err != nil {
			refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
			return
		}
		if err := trivial.Run(c.Request.Context(), rdb, nil).Err(); err != nil {
			refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
			return
		}
		signAndAnswer(c, issuer, accesstoken.Grant{ClientID: clientID, Scope: signedScope, Generation: 1, Now: time.Now()})
	})
	e.POST("/authsign", func(c *gin.Context) {
		_, id, secret, ok := readClientRequest(c)
		if !ok {
			return
		}
		a, ok := fl.authenticate(c, id, secret, nil)
		if !ok {
			return
		}
		signAndAnswer(c, issuer, accesstoken.Grant{ClientID: id, Scope: strings.Join(a.Scopes, " "), Generation: a.Generation, SecretID: a.SecretID, Now: time.Now()})
	})
	e.POST("/authcheck", func(c *gin.Context) {
		form, id, secret, ok := readClientRequest(c)
		if !ok {
			return
		}
		params, err := url.ParseQuery(string(form))
		if err != nil {
			refuse(c, http.StatusBadRequest, "invalid_request")
			return
		}
		claims, verr := fl.verifier.VerifyContext(c.Request.Context(), params.Get("token"))
		var check *clients.TokenRef
		if verr == nil && claims.ClientID == id {
			check = new(clients.TokenRefOf(claims))
		}
		a, ok := fl.authenticate(c, id, secret, check)
		if !ok {
			return
		}
		if check == nil || claims.Generation != a.Generation || !a.TokenAlive {
			answerNoStore(c, []byte(`{"active":false}`))
			return
		}
		data, err := json.Marshal(tokenserver.Introspection{Active: true, Scope: claims.Scope, ClientID: claims.ClientID, TokenType: "Bearer",
			Exp: claims.ExpiresAt, Iat: claims.IssuedAt, Sub: claims.Subject, Aud: claims.Audience, Iss: claims.Issuer, Jti: claims.ID})
		if err != nil {
			refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
			return
		}
		answerNoStore(c, data)
	})
	return e
}

// floors are what the authserver's floors use of the shared packages: the
// registry (its authentication script) and the cached verifier.
type floors struct {
	registry *clients.Store
	verifier *accesstoken.CachingVerifier
}

// readClientRequest reads the body of a floor's request and its HTTP Basic
// credentials; what it cannot read it answers (503, 401) and ok is false.
func readClientRequest(c *gin.Context) (body []byte, id, secret string, ok bool) {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, 64<<10))
	if err != nil {
		refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
		return nil, "", "", false
	}
	if id, secret, ok = c.Request.BasicAuth(); !ok {
		refuse(c, http.StatusUnauthorized, "invalid_client")
	}
	return body, id, secret, ok
}

// authenticate authenticates the client id and secret (the request's HTTP
// Basic credentials, taken as sent: the harness's ids and secrets hold no
// character RFC 6749 section 2.3.1 would encode) as the authserver does,
// in one round trip (clients.Store.Authenticate, the authserver's default
// failure limits, the presenting address's IP): a token request when
// check is nil (the scope and the token limit counted), else
// introspection's caller with check's standing read. What it refuses is
// answered here (401, 429 or 503, fixed bodies) and ok is false.
func (fl floors) authenticate(c *gin.Context, id, secret string, check *clients.TokenRef) (clients.Authentication, bool) {
	host, _, _ := net.SplitHostPort(c.Request.RemoteAddr)
	a, err := fl.registry.Authenticate(c.Request.Context(), clients.Attempt{
		ClientID: id, Secret: secret, Address: host,
		FailureLimit: tokenserver.DefaultFailuresPerMinute, RepeatLimit: tokenserver.DefaultRepeatedFailuresPerMinute,
		Token: check == nil, Check: check,
	})
	switch {
	case err != nil:
		refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
	case a.Outcome == clients.TooManyFailures || a.Outcome == clients.TokenLimited:
		refuse(c, http.StatusTooManyRequests, "slow_down")
	case a.Outcome != clients.Authenticated:
		refuse(c, http.StatusUnauthorized, "invalid_client")
	default:
		return a, true
	}
	return clients.Authentication{}, false
}

// signAndAnswer signs the token of g and answers it as the token endpoint
// answers one (RFC 6749 section 5.1).
func signAndAnswer(c *gin.Context, issuer *accesstoken.Issuer, g accesstoken.Grant) {
	tok, claims, err := issuer.Issue(g)
	if err != nil {
		refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
		return
	}
	data, err := json.Marshal(signedResponse{AccessToken: tok, ExpiresIn: claims.ExpiresAt - claims.IssuedAt, Scope: claims.Scope, TokenType: "Bearer"})
	if err != nil {
		refuse(c, http.StatusServiceUnavailable, "temporarily_unavailable")
		return
	}
	answerNoStore(c, data)
}

// answerNoStore answers data as the token and introspection endpoints
// answer: 200, JSON, no-store (RFC 6749 section 5.1, RFC 7662 section 2.2).
func answerNoStore(c *gin.Context, data []byte) {
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	c.Data(http.StatusOK, jsonContentType, data)
}

// refuse answers an OAuth error code with status (the floors' refusals;
// the harness counts any non-2xx as an error of the run).
func refuse(c *gin.Context, status int, code string) {
	c.Data(status, jsonContentType, []byte(`{"error":"`+code+`"}`))
}
