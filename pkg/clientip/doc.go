// Package clientip finds the address a request came from. Forwarded headers
// (X-Forwarded-For, X-Request-Id) are believed only when the connection comes
// from a configured proxy: otherwise any caller could pick the address that
// per-address limits count against.
package clientip
