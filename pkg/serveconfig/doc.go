// Package serveconfig is the configuration that `authserver serve` and
// `resourceserver serve` share, declared once: the flags both take (the
// listen addresses, Redis, proxies, logging, connections, the token names),
// each with its environment variable, their validation, the process's
// logger (which go-redis logs through too) and the health check command
// both binaries carry. Each binary adds its own flags beside them. README
// ("Configuration") lists every variable.
package serveconfig
