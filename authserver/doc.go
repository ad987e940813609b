// Command authserver is the token service and its operator tool.
//
//	authserver serve                 serve the token endpoint, introspection, JWKS and metadata
//	authserver keys generate         write a signing key set (or rotate one)
//	authserver keys withdraw         withdraw a key everywhere within seconds (pkg/keywithdrawal)
//	authserver orgs create|list      manage organisations
//	authserver clients ...           create, rotate-secret, revoke, list, show, set-rate-limit, audit
//	authserver sandbox seed          create the simulation organisation and demo clients
//
// Every command reads REDIS_URL, speaks to people by default and to machines
// with --json, and on bad input exits non-zero with one clear line.
package main
