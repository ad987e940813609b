package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// operatorCommand runs the orgs, clients and sandbox commands against the
// registry in REDIS_URL.
func operatorCommand(ctx context.Context, group string, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("%s: missing subcommand (run 'authserver help')", group)
	}
	sub := args[0]
	fl := newFlags(group + " " + sub)
	asJSON := fl.Bool("json", false, "machine-readable output")
	var (
		slug, name, env, org, audience, scopes string
		rateLimit                              int64
		tokenLimit                             bool
	)
	switch group + " " + sub {
	case "orgs create":
		fl.StringVar(&slug, "slug", "", "stable organisation identifier")
		fl.StringVar(&name, "name", "", "organisation name")
		fl.StringVar(&env, "environment", "", "sandbox or live")
	case "clients create":
		fl.StringVar(&org, "org", "", "organisation slug")
		fl.StringVar(&name, "name", "", "client name")
		fl.StringVar(&audience, "audience", "", "pharma, hospital or psp_partner")
		fl.StringVar(&scopes, "scopes", "", "space-separated scopes")
		fl.Int64Var(&rateLimit, "rate-limit", clients.DefaultRateLimitPerMinute, "API requests per minute")
	case "clients list":
		fl.StringVar(&org, "org", "", "only this organisation's clients")
	case "clients set-rate-limit":
		fl.BoolVar(&tokenLimit, "token", false, "set the token requests per minute instead of API requests")
	case "orgs list", "clients rotate-secret", "clients revoke", "clients show", "clients audit", "sandbox seed":
	default:
		return usagef("unknown command %q (run 'authserver help')", group+" "+sub)
	}
	pos, err := parseFlags(fl, args[1:])
	if err != nil {
		return err
	}
	wantArgs := map[string]int{"clients rotate-secret": 1, "clients revoke": 1, "clients show": 1, "clients audit": 1, "clients set-rate-limit": 2}[group+" "+sub]
	if len(pos) != wantArgs {
		return usagef("%s %s takes %d argument(s), got %d", group, sub, wantArgs, len(pos))
	}

	store, closeStore, err := openRegistry(ctx, getenv)
	if err != nil {
		return err
	}
	defer closeStore()
	out := output{w: stdout, json: *asJSON}

	switch group + " " + sub {
	case "orgs create":
		o, err := store.CreateOrg(ctx, clients.OrgSpec{Slug: slug, Name: name, Environment: env})
		if err != nil {
			return err
		}
		return out.print(o, func(w io.Writer) { fmt.Fprintf(w, "created organisation %s (%s, %s)\n", o.Slug, o.Name, o.Environment) })
	case "orgs list":
		orgs, err := store.ListOrgs(ctx)
		if err != nil {
			return err
		}
		return out.print(orgs, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tENVIRONMENT\tCREATED")
			for _, o := range orgs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Slug, o.Name, o.Environment, o.CreatedAt.Format(time.RFC3339))
			}
			tw.Flush()
		})
	case "clients create":
		c, secret, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: org, Name: name, Audience: audience,
			Scopes: clients.ParseScopes(scopes), RateLimitPerMinute: rateLimit})
		if err != nil {
			return err
		}
		return out.secret(c, secret, "created client")
	case "clients rotate-secret":
		c, secret, err := store.RotateSecret(ctx, pos[0])
		if err != nil {
			return err
		}
		return out.secret(c, secret, "rotated the secret of client")
	case "clients revoke":
		c, err := store.Revoke(ctx, pos[0])
		if err != nil {
			return err
		}
		return out.print(c, func(w io.Writer) {
			fmt.Fprintf(w, "revoked client %s: token requests are refused and every token it held is dead\n", c.ID)
		})
	case "clients list":
		list, err := store.ListClients(ctx, org)
		if err != nil {
			return err
		}
		return out.print(list, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLIENT_ID\tNAME\tAUDIENCE\tORG\tSTATUS\tSCOPES\tRATE/MIN")
			for _, c := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.ID, c.Name, c.Audience, c.OrgSlug, c.Status, strings.Join(c.Scopes, " "), c.RateLimitPerMinute)
			}
			tw.Flush()
		})
	case "clients show":
		c, err := store.GetClient(ctx, pos[0])
		if err != nil {
			return err
		}
		return out.print(c, func(w io.Writer) { describe(w, c) })
	case "clients audit":
		entries, err := store.ClientAudit(ctx, pos[0])
		if err != nil {
			return err
		}
		return out.print(entries, func(w io.Writer) {
			for _, e := range entries {
				fmt.Fprintf(w, "%s  %-28s %s %s\n", e.At.Format(time.RFC3339Nano), e.Event, e.ClientID, e.Detail)
			}
		})
	case "clients set-rate-limit":
		n, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			return usagef("rate limit %q is not a whole number", pos[1])
		}
		var c clients.Client
		if tokenLimit {
			c, err = store.SetTokenRateLimit(ctx, pos[0], n)
		} else {
			c, err = store.SetRateLimit(ctx, pos[0], n)
		}
		if err != nil {
			return err
		}
		return out.print(c, func(w io.Writer) {
			fmt.Fprintf(w, "client %s: %d API requests and %d token requests per minute, from the next request\n", c.ID, c.RateLimitPerMinute, c.TokenRateLimitPerMinute)
		})
	case "sandbox seed":
		o, seeded, err := store.SeedSandbox(ctx)
		if err != nil {
			return err
		}
		return out.seed(o, seeded)
	}
	return nil
}

// openRegistry opens the registry in REDIS_URL for an operator command.
// Every change waits for the replicas the URL asks for (confirm_replicas:
// one by default on a Sentinel or Cluster URL), so that a command never
// reports as done a change that a failover could undo.
func openRegistry(ctx context.Context, getenv func(string) string) (*clients.Store, func(), error) {
	url := getenv("REDIS_URL")
	confirm, err := redisconn.ConfirmationOf(url)
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	rdb, err := redisconn.Open(url)
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	if err := redisconn.Ping(ctx, rdb, 3*time.Second); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("cannot reach Redis (REDIS_URL): %v", err)
	}
	store := clients.NewStore(rdb, getenv("REDIS_KEY_PREFIX"), nil)
	store.ConfirmWrites(confirm)
	return store, func() { _ = rdb.Close() }, nil
}

// output prints for people, or JSON with --json.
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

// secret prints a client with its secret: the one time the secret is shown.
func (o output) secret(c clients.Client, secret, verb string) error {
	if o.json {
		return o.print(struct {
			clients.Client
			ClientSecret string `json:"client_secret"`
		}{c, secret}, nil)
	}
	fmt.Fprintf(o.w, "%s %s\n", verb, c.ID)
	describe(o.w, c)
	fmt.Fprintf(o.w, "\nclient_id:     %s\nclient_secret: %s\n\nThe secret is shown this once; only its hash is stored. Keep it in a secret store.\n", c.ID, secret)
	return nil
}

func (o output) seed(org clients.Org, seeded []clients.SeededClient) error {
	if o.json {
		type item struct {
			clients.Client
			ClientSecret string `json:"client_secret,omitempty"`
		}
		items := make([]item, len(seeded))
		for i, s := range seeded {
			items[i] = item{s.Client, s.Secret}
		}
		return o.print(map[string]any{"organization": org, "clients": items, "note": "sandbox: demo data only, never real patients"}, nil)
	}
	fmt.Fprintf(o.w, "sandbox organisation %s (%s): demo data only, never real patients\n\n", org.Slug, org.Name)
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
	fmt.Fprintf(tw, "  name\t%s\n  audience\t%s\n  organisation\t%s (%s)\n  environment\t%s\n  scopes\t%s\n  status\t%s\n  rate limit\t%d/min API, %d/min token\n  generation\t%d\n  created\t%s\n",
		c.Name, c.Audience, c.OrgSlug, c.OrgName, c.Environment, strings.Join(c.Scopes, " "), c.Status,
		c.RateLimitPerMinute, c.TokenRateLimitPerMinute, c.Generation, c.CreatedAt.Format(time.RFC3339))
	tw.Flush()
}
