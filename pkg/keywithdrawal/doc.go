// Package keywithdrawal spreads the withdrawal of a token signing key to
// every server within seconds, through Redis.
//
// An operator withdraws a key (`authserver keys withdraw`): Store.Withdraw
// adds its kid to the set of withdrawn kids, raises a version counter (both
// in one transaction, under one hash tag, so it runs on Redis Cluster too)
// and publishes the new version on a channel. Every server runs a Watcher:
// it subscribes to the channel (PUBLISH reaches subscribers on every node
// of a Cluster; go-redis subscribes through Cluster and Sentinel clients
// alike) and, in case a message is lost while a connection is down, reads
// the version every PollInterval (10 s by default). On a change it re-reads
// the set and calls its OnChange function.
//
// A Watcher is half of a server's signing-key authority: the token
// service's (package signingkeys) takes the withdrawn kids with the key
// file, stops publishing the key and stops accepting its tokens; the
// resource server's is its JWKS cache plus the Watcher, and fetches the JWKS
// again at once. Both verify through accesstoken.CachingVerifier, which
// asks the authority's Withdrawn for every token, so a withdrawn key's
// tokens, cached or not, are refused from the moment the message arrives. A withdrawal is permanent: a kid is never reused (kids
// are RFC 7638 thumbprints).
package keywithdrawal
