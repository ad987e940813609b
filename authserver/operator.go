package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jwksuri"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// openOperations opens the operations (the same the admin API runs) on
// the Redis of REDIS_URL (keys under REDIS_KEY_PREFIX), after checking
// that Redis answers: the client registry and the key withdrawals. Every
// operator command gets its operations here, and only here. Every change
// waits for the replicas the URL asks for (confirm_replicas: one by
// default on a Sentinel or Cluster URL), so that a command never reports
// as done a change that a failover could undo (clients.ErrNotReplicated,
// exit status 3). close releases the connection.
func openOperations(ctx context.Context, getenv func(string) string) (ops *operations.Service, close func(), err error) {
	r, err := openRedis(ctx, getenv)
	if err != nil {
		return nil, nil, err
	}
	store := clients.NewStore(r.rdb, r.prefix, nil)
	store.ConfirmWrites(r.confirm)
	withdrawals := keywithdrawal.NewStore(r.rdb, r.prefix)
	withdrawals.ConfirmWrites(r.confirm)
	return &operations.Service{Registry: store, Withdrawals: withdrawals}, func() { _ = r.rdb.Close() }, nil
}

// commandRedis is the Redis of an operator command: the client of
// REDIS_URL, the replicas its changes wait for, and REDIS_KEY_PREFIX.
type commandRedis struct {
	rdb     redis.UniversalClient
	confirm redisconn.Confirmation
	prefix  string
}

// openRedis opens the Redis of REDIS_URL for a command and checks that it
// answers. Commands report a Redis failure themselves, in one line, so
// go-redis's own log lines are silenced: the one place a command sets
// go-redis's process-wide logger (serve sets it in serveconfig).
func openRedis(ctx context.Context, getenv func(string) string) (commandRedis, error) {
	redisconn.SetLogger(nil)
	url := getenv("REDIS_URL")
	confirm, err := redisconn.ConfirmationOf(url)
	if err != nil {
		return commandRedis{}, cli.AsUsage(err)
	}
	rdb, err := redisconn.Open(url)
	if err != nil {
		return commandRedis{}, cli.AsUsage(err)
	}
	if err := redisconn.Ping(ctx, rdb, 3*time.Second); err != nil {
		_ = rdb.Close()
		return commandRedis{}, fmt.Errorf("cannot reach Redis (REDIS_URL): %v", err)
	}
	return commandRedis{rdb: rdb, confirm: confirm, prefix: redisconn.KeyPrefix(getenv)}, nil
}

// operator declares --json and returns an action that runs body with the
// operations (the same the admin API runs) and the chosen output. Changes
// made here are audited as made by "cli".
func operator(fs *flag.FlagSet, env cli.Env, body func(ctx context.Context, ops *operations.Service, out output, args []string) error) cli.Action {
	asJSON := fs.Bool("json", false, "print JSON (deploy/docs/operator-guide.md: JSON output)")
	return func(ctx context.Context, args []string) error {
		ops, closeOps, err := openOperations(ctx, env.Getenv)
		if err != nil {
			return err
		}
		defer closeOps()
		// The token service's jwks_uri policy, from the same settings.
		if ops.JWKS, err = jwksPolicy(env.Getenv); err != nil {
			return err
		}
		ctx = audit.WithActor(ctx, audit.CLI)
		return body(ctx, ops, output{w: env.Stdout, json: *asJSON}, args)
	}
}

// jwksPolicy reads the jwks_uri policy the token service serves with
// (JWKS_URL_ALLOW_HTTP, JWKS_URL_ALLOW_PRIVATE), so that the CLI registers
// no URL the token service would refuse to fetch.
func jwksPolicy(getenv func(string) string) (jwksuri.Policy, error) {
	var p jwksuri.Policy
	var err error
	if p.AllowHTTP, err = cli.EnvBool(getenv, "JWKS_URL_ALLOW_HTTP", false); err != nil {
		return p, err
	}
	p.AllowPrivate, err = cli.EnvBool(getenv, "JWKS_URL_ALLOW_PRIVATE", false)
	return p, err
}

// checkLimit applies operations.CheckLimit to a flag or argument: a bad
// limit is a usage error (exit 2).
func checkLimit(what string, n int64) error {
	var refusal *clients.Error // CheckLimit's every refusal
	if err := operations.CheckLimit(what, n); errors.As(err, &refusal) {
		return cli.Usagef("%s", refusal.Detail)
	}
	return nil
}

func orgsCreate(fs *flag.FlagSet, env cli.Env) cli.Action {
	slug := fs.String("slug", "", "stable organisation identifier (a-z, 0-9, -)")
	name := fs.String("name", "", "organisation name")
	environment := fs.String("environment", "", "sandbox or live")
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		o, err := ops.CreateOrg(ctx, clients.OrgSpec{Slug: *slug, Name: *name, Environment: *environment})
		if err != nil {
			return err
		}
		return out.print(operations.OrgOf(o), func(w io.Writer) {
			fmt.Fprintf(w, "created organisation %s (%s, %s)\n", o.Slug, printable(o.Name), o.Environment)
		})
	})
}

func orgsList(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		orgs, err := ops.ListOrgs(ctx)
		if err != nil {
			return err
		}
		return out.print(operations.OrgsOf(orgs), func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tENVIRONMENT\tCREATED")
			for _, o := range orgs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(o.Slug), printable(o.Name), o.Environment, o.CreatedAt.Format(time.RFC3339))
			}
			tw.Flush()
		})
	})
}

func clientsCreate(fs *flag.FlagSet, env cli.Env) cli.Action {
	org := fs.String("org", "", "slug of an existing organisation")
	name := fs.String("name", "", "client name")
	audience := fs.String("audience", "", "pharma, hospital or psp_partner")
	scopes := fs.String("scopes", "", `space-separated scopes (required; --scopes "" for none)`)
	rateLimit := fs.Int64("rate-limit", clients.DefaultRateLimitPerMinute, "API requests per minute, at least 1")
	auth := fs.String("auth", clients.AuthClientSecret, "client_secret; private_key_jwt (RFC 7523) or self_signed_tls_client_auth (RFC 8705) with --jwks-file or --jwks-url; tls_client_auth (RFC 8705) with one --tls-*")
	subjects := subjectFlags(fs)
	dpopBound := fs.Bool("dpop-bound", false, "issue the client DPoP-bound tokens only (RFC 9449 dpop_bound_access_tokens): a token request without a DPoP proof is refused")
	keys := keyFlags(fs, env)
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		if err := checkLimit("--rate-limit", *rateLimit); err != nil {
			return err
		}
		if !flagGiven(fs, "scopes") {
			return usagef(`clients create needs --scopes "SCOPE ..." (--scopes "" makes a client with no scope)`)
		}
		spec := clients.ClientSpec{OrgSlug: *org, Name: *name, Audience: *audience,
			Scopes: clients.ParseScopes(*scopes), RateLimitPerMinute: *rateLimit, DPoPBound: *dpopBound}
		given, err := subjects.given()
		if err != nil {
			return err
		}
		switch *auth {
		case clients.AuthClientSecret:
			if keys.given() {
				return usagef("--jwks-file and --jwks-url are for --auth private_key_jwt")
			}
			if len(given) > 0 {
				return usagef("--tls-* are for --auth tls_client_auth")
			}
		case clients.AuthPrivateKeyJWT, clients.AuthSelfSignedTLSClient, clients.AuthTLSClient:
			// The registry lists every problem of the method and what it
			// needs at once (clients.ClientSpec.Validate).
			spec.AuthMethod = *auth
			if len(given) == 1 {
				spec.TLSSubject = &given[0]
			}
			if keys.given() {
				src, err := keys.source()
				if err != nil {
					return err
				}
				spec.Keys = &src
			} else if *auth == clients.AuthPrivateKeyJWT {
				src, err := keys.source()
				if err != nil {
					return err
				}
				spec.Keys = &src
			}
		default:
			return usagef("--auth %q: one of %s", *auth, strings.Join(clients.AuthMethods, ", "))
		}
		c, err := ops.CreateClient(ctx, spec)
		switch spec.Method() {
		case clients.AuthPrivateKeyJWT:
			return out.changed(c.Client, err, "created client %s: it authenticates with private_key_jwt (assertions signed by its keys; no secret)")
		case clients.AuthTLSClient, clients.AuthSelfSignedTLSClient:
			return out.changed(c.Client, err, "created client %s: it authenticates with "+spec.Method()+" (its mutual-TLS client certificate; no secret)")
		}
		return out.secret(c, err, "created client")
	})
}

// subjectHelp names what each of clients.SubjectKinds is, for --tls-*.
var subjectHelp = [5]string{
	`subject DN, RFC 4514 (e.g. "CN=ward.example,O=St Elsewhere,C=NL")`,
	"DNS name SAN", "URI SAN", "IP address SAN", "e-mail address SAN",
}

// subjectFlags declares --tls-subject-dn, --tls-san-dns, --tls-san-uri,
// --tls-san-ip and --tls-san-email: a tls_client_auth client's
// certificate name, one of clients.SubjectKinds each.
func subjectFlags(fs *flag.FlagSet) *tlsSubjectFlags {
	var f tlsSubjectFlags
	for i, kind := range clients.SubjectKinds {
		flagName := strings.ReplaceAll(strings.TrimPrefix(kind, "tls_client_auth_"), "_", "-")
		f[i] = fs.String("tls-"+flagName, "", "tls_client_auth: the client certificate's "+subjectHelp[i])
	}
	return &f
}

type tlsSubjectFlags [5]*string

// given is the subjects the flags name: none or one; more is a usage
// error.
func (f *tlsSubjectFlags) given() ([]clients.TLSSubject, error) {
	var given []clients.TLSSubject
	for i, v := range f {
		if *v != "" {
			given = append(given, clients.TLSSubject{Kind: clients.SubjectKinds[i], Value: *v})
		}
	}
	if len(given) > 1 {
		return nil, usagef("give one --tls-subject-dn, --tls-san-dns, --tls-san-uri, --tls-san-ip or --tls-san-email, not %d (RFC 8705 section 2.1.2)", len(given))
	}
	return given, nil
}

// flagGiven reports whether the flag name was set on the command line,
// even to "".
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// keyFlags declares --jwks-file and --jwks-url: a private_key_jwt client's
// public keys.
func keyFlags(fs *flag.FlagSet, env cli.Env) *keySource {
	k := &keySource{getenv: env.Getenv}
	fs.StringVar(&k.file, "jwks-file", "", "a file holding the client's public JWK set (RFC 7517)")
	fs.StringVar(&k.url, "jwks-url", "", "an https URL serving the client's public JWK set, fetched by the token service (http only with JWKS_URL_ALLOW_HTTP=true)")
	return k
}

type keySource struct {
	file, url string
	getenv    func(string) string
}

func (k *keySource) given() bool { return k.file != "" || k.url != "" }

// source reads the keys the flags name; a problem with them is a usage
// error (exit 2) that says every problem at once.
func (k *keySource) source() (clients.ClientKeySource, error) {
	if (k.file == "") == (k.url == "") {
		return clients.ClientKeySource{}, usagef("give one of --jwks-file and --jwks-url")
	}
	allowHTTP, err := cli.EnvBool(k.getenv, "JWKS_URL_ALLOW_HTTP", false)
	if err != nil {
		return clients.ClientKeySource{}, err
	}
	src := clients.ClientKeySource{URL: k.url, AllowHTTP: allowHTTP}
	if k.file != "" {
		data, err := os.ReadFile(k.file)
		if err != nil {
			return src, usagef("--jwks-file: %v", err)
		}
		src.JWKS = data
	}
	var refusal *clients.Error // Validate's every refusal
	if err := src.Validate(); errors.As(err, &refusal) {
		return src, usagef("%s", refusal.Detail)
	}
	return src, nil
}

func operatorsCreate(fs *flag.FlagSet, env cli.Env) cli.Action {
	name := fs.String("name", "", "who or what uses it (a person, a portal, an automation)")
	readOnly := fs.Bool("read-only", false, "admin.read only: the operator can read the registry but change nothing")
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		c, err := ops.CreateOperator(ctx, clients.OperatorSpec{Name: *name, ReadOnly: *readOnly})
		return out.secret(c, err, "created operator client")
	})
}

func clientsRotate(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		c, err := ops.RotateSecret(ctx, args[0])
		return out.secret(c, err, "rotated the secret of client")
	})
}

func clientsAddSecret(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		c, err := ops.AddSecret(ctx, args[0])
		return out.secret(c, err, fmt.Sprintf("added secret %d to client", c.SecretID))
	})
}

func clientsRetireSecret(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		sid, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || sid < 1 {
			return usagef("secret id %q is not a whole number of at least 1 ('authserver clients show %s' lists them)", args[1], args[0])
		}
		c, err := ops.RetireSecret(ctx, args[0], sid)
		return out.changed(c, err, "retired secret "+args[1]+" of client %s: it and every token issued for it are dead")
	})
}

func clientsRotateKeys(fs *flag.FlagSet, env cli.Env) cli.Action {
	keys := keyFlags(fs, env)
	subjects := subjectFlags(fs)
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		given, err := subjects.given()
		if err != nil {
			return err
		}
		if len(given) == 1 {
			if keys.given() {
				return usagef("give a certificate name (--tls-*, tls_client_auth) or keys (--jwks-file, --jwks-url), not both")
			}
			c, err := ops.RotateTLSSubject(ctx, args[0], given[0])
			return out.changed(c, err, "changed the certificate name of client %s: certificates under the old name and every token issued before are dead")
		}
		src, err := keys.source()
		if err != nil {
			return err
		}
		c, err := ops.RotateKeys(ctx, args[0], src)
		return out.changed(c, err, "rotated the keys of client %s: assertions of the old keys and every token issued before are dead")
	})
}

func clientsRevoke(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		c, err := ops.Revoke(ctx, args[0])
		if err != nil {
			return err
		}
		return out.print(operations.ClientOf(c), func(w io.Writer) {
			fmt.Fprintf(w, "revoked client %s: token requests are refused and every token it held is dead\n", c.ID)
		})
	})
}

func clientsList(fs *flag.FlagSet, env cli.Env) cli.Action {
	org := fs.String("org", "", "only this organisation's clients")
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		list, err := ops.ListClients(ctx, *org)
		if err != nil {
			return err
		}
		return out.print(operations.ClientsOf(list), func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLIENT_ID\tNAME\tAUDIENCE\tORG\tSTATUS\tSCOPES\tRATE/MIN")
			for _, c := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.ID, printable(c.Name), c.Audience, printable(c.OrgSlug), c.Status, strings.Join(c.Scopes, " "), c.RateLimitPerMinute)
			}
			tw.Flush()
		})
	})
}

func clientsShow(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		c, err := ops.GetClient(ctx, args[0])
		if err != nil {
			return err
		}
		return out.print(operations.ClientOf(c), func(w io.Writer) { describe(w, c) })
	})
}

func clientsAudit(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		entries, err := ops.ClientAudit(ctx, args[0])
		if err != nil {
			return err
		}
		return out.print(operations.AuditEntriesOf(entries), func(w io.Writer) {
			for _, e := range entries {
				fmt.Fprintf(w, "%s  %-28s %s %s\n", e.At.Format(time.RFC3339Nano), e.Event, e.ClientID, printable(e.DetailWithActor()))
			}
		})
	})
}

func clientsSetRateLimit(fs *flag.FlagSet, env cli.Env) cli.Action {
	tokenLimit := fs.Bool("token", false, "set the token requests per minute instead of the API requests")
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("rate limit %q is not a whole number", args[1])
		}
		if err := checkLimit("rate limit", n); err != nil {
			return err
		}
		c, err := ops.SetRateLimit(ctx, args[0], n, *tokenLimit)
		if err != nil {
			return err
		}
		return out.print(operations.ClientOf(c), func(w io.Writer) {
			fmt.Fprintf(w, "client %s: %d API requests and %d token requests per minute, from the next request\n", c.ID, c.RateLimitPerMinute, c.TokenRateLimitPerMinute)
		})
	})
}

func clientsSetDPoP(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, args []string) error {
		bound := args[1] == "true"
		if !bound && args[1] != "false" {
			return usagef("%q: want true or false", args[1])
		}
		c, err := ops.SetDPoPBound(ctx, args[0], bound)
		if err != nil {
			return err
		}
		return out.print(operations.ClientOf(c), func(w io.Writer) {
			if c.DPoPBound {
				fmt.Fprintf(w, "client %s: DPoP-bound tokens only, from its next token request\n", c.ID)
			} else {
				fmt.Fprintf(w, "client %s: bearer or DPoP-bound tokens, from its next token request\n", c.ID)
			}
		})
	})
}

func sandboxSeed(fs *flag.FlagSet, env cli.Env) cli.Action {
	return operator(fs, env, func(ctx context.Context, ops *operations.Service, out output, _ []string) error {
		o, seeded, err := ops.SeedSandbox(ctx)
		if len(seeded) == 0 {
			return err
		}
		// Clients created but not confirmed are printed with their secrets
		// before the error: the one time the secrets are shown.
		return errors.Join(out.seed(o, seeded), err)
	})
}

// output prints for people, or JSON with --json: one JSON value (object or
// array) indented by two spaces, whose fields are documented in
// deploy/docs/operator-guide.md ("JSON output").
type output struct {
	w    io.Writer
	json bool
}

func (o output) print(v any, human func(io.Writer)) error {
	if o.json {
		enc := json.NewEncoder(o.w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(o.w)
	return nil
}

// secret prints a client with its secret, the one time the secret is
// shown, and returns err. A change the replicas did not confirm (err is
// clients.ErrNotReplicated, exit status 3) is printed all the same, since
// it took effect: the printed secret is the one that works now. The error
// line then says not to run the command again blindly: a second create
// makes a second client, a second rotation another secret.
func (o output) secret(c operations.WithSecret, err error, verb string) error {
	if c.ClientSecret == "" {
		return err
	}
	if o.json {
		if perr := o.print(operations.ClientWithSecretOf(c), nil); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(o.w, "%s %s\n", verb, c.ID)
		describe(o.w, c.Client)
		fmt.Fprintf(o.w, "\nclient_id:     %s\nclient_secret: %s\n\nThe secret is shown this once; only its hash is stored. Keep it in a secret store.\n", c.ID, c.ClientSecret)
	}
	if errors.Is(err, clients.ErrNotReplicated) {
		return fmt.Errorf("%w; the secret printed above is the one that works now: keep it, and do not run this command again; once a replica answers, 'authserver clients show %s' tells whether the change survived (credential_generation %d)", err, c.ID, c.Generation)
	}
	return err
}

// changed prints a client after a change (line: a format with the client
// id) and returns err; a change the replicas did not confirm is printed
// too, since it took effect on the primary.
func (o output) changed(c clients.Client, err error, line string) error {
	if c.ID == "" || (err != nil && !errors.Is(err, clients.ErrNotReplicated)) {
		return err
	}
	if perr := o.print(operations.ClientOf(c), func(w io.Writer) { fmt.Fprintf(w, line+"\n", c.ID); describe(w, c) }); perr != nil {
		return perr
	}
	return err
}

func (o output) seed(org clients.Org, seeded []clients.SeededClient) error {
	if o.json {
		return o.print(map[string]any{"organization": operations.OrgOf(org), "clients": operations.SeededOf(seeded),
			"note": "sandbox: demo data only, never real patients"}, nil)
	}
	fmt.Fprintf(o.w, "sandbox organisation %s (%s): demo data only, never real patients\n\n", org.Slug, printable(org.Name))
	for _, s := range seeded {
		fmt.Fprintf(o.w, "%-12s %s  scopes: %s\n", s.Client.Audience, s.Client.ID, strings.Join(s.Client.Scopes, " "))
		if s.Secret != "" {
			fmt.Fprintf(o.w, "             client_secret: %s\n", s.Secret)
		} else {
			fmt.Fprintf(o.w, "             (existed already; its secret was shown when it was created: 'authserver clients rotate-secret %s' issues a new one)\n", s.Client.ID)
		}
	}
	return nil
}

func describe(w io.Writer, c clients.Client) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  name\t%s\n  audience\t%s\n  organisation\t%s (%s)\n  environment\t%s\n  scopes\t%s\n  status\t%s\n  rate limit\t%d/min API, %d/min token\n  generation\t%d\n  created\t%s\n  authentication\t%s\n",
		printable(c.Name), c.Audience, printable(c.OrgSlug), printable(c.OrgName), c.Environment, strings.Join(c.Scopes, " "), c.Status,
		c.RateLimitPerMinute, c.TokenRateLimitPerMinute, c.Generation, c.CreatedAt.Format(time.RFC3339), c.AuthMethod)
	for _, si := range c.Secrets {
		fmt.Fprintf(tw, "  secret %d\tsince %s\n", si.ID, si.CreatedAt.Format(time.RFC3339))
	}
	if c.TLSSubject != nil {
		fmt.Fprintf(tw, "  certificate\t%s %s\n", c.TLSSubject.Kind, printable(c.TLSSubject.Value))
	}
	if c.AuthMethod == clients.AuthPrivateKeyJWT || c.AuthMethod == clients.AuthSelfSignedTLSClient {
		keys := "registered JWK set"
		if c.JWKSURI != "" {
			keys = printable(c.JWKSURI)
		}
		fmt.Fprintf(tw, "  keys\tversion %d, %s\n", c.KeysVersion, keys)
	}
	if c.DPoPBound {
		fmt.Fprintf(tw, "  tokens\tDPoP-bound only (dpop_bound_access_tokens)\n")
	}
	tw.Flush()
}

// printable escapes what a terminal would act on instead of showing, in
// text read from the registry (names stored before
// clients.NameProblems refused such characters): every character that is
// not printable (unicode.IsPrint: controls, format characters such as the
// bidirectional overrides, invalid UTF-8) is written as a Go escape
// (\n, \x1b, \u202e), and so is a backslash (\\), so the printed text
// reads back unambiguously. JSON output (--json) is escaped by JSON.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
