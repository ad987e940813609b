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
// The resource server filters withdrawn keys out of the JWKS it verifies
// with (Watcher.Filter), so their tokens, cached or not, are refused from
// the moment the message arrives, and fetches the JWKS again at once; the
// token service stops publishing the key and stops accepting its tokens at
// introspection. A withdrawal is permanent: a kid is never reused (kids
// are RFC 7638 thumbprints).
package keywithdrawal
