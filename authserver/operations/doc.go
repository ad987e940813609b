// Package operations holds every operator action on the registry and the
// signing keys, once, for the two ways operators reach them: the authserver
// command line (talking to Redis directly) and the admin HTTP API (package
// adminapi). Each action validates its input, applies the rules that are
// not the registry's own (limits of at least 1, an unknown organisation is
// an error and not an empty listing, the signing key is never withdrawn)
// and returns the registry's errors unchanged, so that each caller maps
// them to its own exit status or HTTP status in one place.
//
// A key withdrawal has one rule at both doors (CheckWithdrawal: a
// published key, never the signing key), checked against the keys in
// force where the operator acts (Keys): WithdrawKey against the serving
// replica's keys (the admin API), WithdrawFromFile against the key set
// file, which it rewrites after Redis (the command line).
//
// A change the Redis replicas did not confirm (clients.ErrNotReplicated)
// comes back WITH its result: the change took effect on the primary, and a
// new secret is the only one that works now, so it is never dropped.
//
// Names given at either door pass one rule (clients.NameProblems: no
// control or bidirectional formatting character). The wire types (wire.go)
// are what both doors show: the admin API's JSON and the CLI's --json,
// converted from the registry's storage types.
package operations
