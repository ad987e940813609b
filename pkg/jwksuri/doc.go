// Package jwksuri is the one place that decides which jwks_uri the token
// service may fetch a private_key_jwt client's public keys from (RFC 7591
// section 2, RFC 7523 section 3), and fetches them: the operator's Policy;
// Classify, which refuses every address that is not global unicast per the
// IANA IPv4 and IPv6 special-purpose address registries (after unwrapping
// IPv4-mapped, IPv4-compatible, NAT64, 6to4 and Teredo forms) and the
// host's own addresses; Policy.CheckRegistration, which the operator CLI
// and the admin API run on a jwks_uri before it is registered; and Fetcher,
// whose HTTP client checks every address it dials (so a name that
// resolves, or is re-bound, to a refused address is refused as the address
// itself would be) and every redirect.
//
// deploy/docs/operator-guide.md ("Keys behind a jwks_uri") describes the
// settings:
// JWKS_URL_ALLOW_HTTP and JWKS_URL_ALLOW_PRIVATE.
package jwksuri
