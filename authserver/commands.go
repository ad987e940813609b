package main

import (
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// commands is the table of every authserver command: `authserver help`
// lists it, and each row gives its command's --help.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "serve", Synopsis: "[--addr A] [--metrics-addr A] [--admin-addr A] [--keys FILE] [--issuer URL] [--audience A] [--trusted-proxies CIDRS] [--log-level L] [--accept-legacy-secrets]",
			Summary: "Serve the token service (token, introspection, JWKS, metadata), its metrics on --metrics-addr and the admin API on --admin-addr.",
			Setup:   serveCommand},
		{Name: "healthcheck", Synopsis: "[--url URL]",
			Summary: "Exit 0 when the local /readyz answers 200 (container health checks without curl).",
			Setup:   httpserver.HealthcheckCommand("8080")},
		{Name: "keys generate", Synopsis: "--out FILE [--alg EdDSA|ES256] [--rotate [--keep N] | --stage] [--json]",
			Summary: "Write a signing key set (0600); --rotate signs with a new key, --stage publishes one without signing with it.",
			Setup:   keysGenerate},
		{Name: "keys promote", Synopsis: "--file FILE KID [--json]", Args: 1,
			Summary: "Make a published key the signing key.",
			Setup:   keysPromote},
		{Name: "keys withdraw", Synopsis: "--file FILE [--json] [--] KID", Args: 1,
			Summary: "Withdraw a key at once on every server (reads REDIS_URL; exit 3 if no replica confirms); never the signing key.",
			Setup:   keysWithdraw},
		{Name: "keys list", Synopsis: "--file FILE [--json]",
			Summary: "List the keys of a key set file.",
			Setup:   keysList},
		{Name: "orgs create", Synopsis: "--slug S --name N --environment sandbox|live [--json]",
			Summary: "Create an organisation.",
			Setup:   orgsCreate},
		{Name: "orgs list", Synopsis: "[--json]",
			Summary: "List organisations.",
			Setup:   orgsList},
		{Name: "operators create", Synopsis: "--name N [--read-only] [--json]",
			Summary: "Create an operator client for the admin API (scopes admin.read and admin.write, or admin.read only); prints client_id and client_secret once.",
			Setup:   operatorsCreate},
		{Name: "clients create", Synopsis: `--org S --name N --audience pharma|hospital|psp_partner --scopes "..." [--rate-limit N] [--json]`,
			Summary: "Create a client; prints client_id and client_secret once.",
			Setup:   clientsCreate},
		{Name: "clients rotate-secret", Synopsis: "CLIENT_ID [--json]", Args: 1,
			Summary: "Issue a new secret (printed once); the old secret and every token issued under it die at once.",
			Setup:   clientsRotate},
		{Name: "clients revoke", Synopsis: "CLIENT_ID [--json]", Args: 1,
			Summary: "Revoke a client for good: token requests get invalid_client, every token it holds dies at once.",
			Setup:   clientsRevoke},
		{Name: "clients list", Synopsis: "[--org S] [--json]",
			Summary: "List clients (of one organisation with --org); never a secret.",
			Setup:   clientsList},
		{Name: "clients show", Synopsis: "CLIENT_ID [--json]", Args: 1,
			Summary: "Show a client; never its secret.",
			Setup:   clientsShow},
		{Name: "clients set-rate-limit", Synopsis: "CLIENT_ID N [--token] [--json]", Args: 2,
			Summary: "Set the client's API requests per minute (token requests with --token), at least 1, from the next request.",
			Setup:   clientsSetRateLimit},
		{Name: "clients audit", Synopsis: "CLIENT_ID [--json]", Args: 1,
			Summary: "Print the client's audit stream (created, rotate, revoke, rate limits); never a secret.",
			Setup:   clientsAudit},
		{Name: "sandbox seed", Synopsis: "[--json]",
			Summary: "Create, idempotently, the sandbox-simulation organisation (demo data only) and one demo client per audience.",
			Setup:   sandboxSeed},
	}
}
