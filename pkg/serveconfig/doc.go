// Package serveconfig is the configuration that `authserver serve` and
// `resourceserver serve` share, declared once: the flags both take (the
// listen addresses, Redis, proxies, logging, connections, the token names),
// each with its environment variable, their validation (Check: every
// problem, the binary's own included, in one usage error) and the health
// check command both binaries carry. Each binary adds its own flags beside
// them; package serverruntime opens what they configure.
// deploy/docs/configuration.md lists every flag and variable.
package serveconfig
