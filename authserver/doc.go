// Command authserver is the token service and its operator tool.
//
//	authserver serve                 serve the token endpoint, introspection, JWKS and metadata (and /metrics)
//	authserver keys generate         write a signing key set (or rotate one)
//	authserver keys withdraw         withdraw a key everywhere within seconds (pkg/keywithdrawal)
//	authserver orgs create|list      manage organisations
//	authserver clients ...           create, rotate-secret, revoke, list, show, set-rate-limit, set-dpop-bound, audit
//	authserver sandbox seed          create the simulation organisation and demo clients
//	authserver help                  list every command; COMMAND [SUBCOMMAND] --help for one
//
// Every operator command, key withdrawal included, runs its action through
// authserver/operations, opened on REDIS_URL by openOperations (the one
// place the registry and the withdrawals are opened), speaks to people by default and to machines with
// --json, and on bad input exits non-zero with one clear line: 1 for a
// runtime failure, 2 for a usage error, 3 for a credential change no Redis
// replica confirmed (clients.ErrNotReplicated).
//
// Files: main.go (main, run, exit statuses), commands.go (the command table,
// package cli), serve.go (serve's configuration and wiring), operator.go
// (orgs, clients, sandbox), keys.go, redislog.go (go-redis's log lines).
package main
