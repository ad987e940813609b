package clients

import "strconv"

// The Redis keys of the registry, each under a hash tag so that the keys a
// script touches together share a Cluster slot: a client's keys under
// "{ID}", an organisation's under "{org:SLUG}", the indexes under
// "{registry}". deploy/docs/redis-keys.md lists them with every other key
// the platform writes (types, lifetimes, owners), and
// authserver/adminapi's TestRedisKeysListed checks that list against what the
// servers write.

// clientKey is a client's record (hash, kept for good).
func (s *Store) clientKey(id string) string { return s.prefix + "{" + id + "}:client" }

// clientAudit is a client's audit trail (list of audit.Record lines,
// capped at auditMaxLen).
func (s *Store) clientAudit(id string) string { return s.prefix + "{" + id + "}:audit" }

// changeNonceKey holds the nonce of the client's last operator change for
// five minutes (lua/change.lua).
func (s *Store) changeNonceKey(id string) string { return s.prefix + "{" + id + "}:change" }

// keysKey holds a private_key_jwt client's public keys (string, kept for
// good).
func (s *Store) keysKey(id string) string { return s.prefix + "{" + id + "}:keys" }

// Request counts (package ratelimit's windows; "rw", not the sliding
// logs' "rl" of earlier versions, whose keys were sorted sets), each
// expiring a window after its newest request.
func (s *Store) apiLogKey(id string) string   { return s.prefix + "{" + id + "}:rw:api" }
func (s *Store) tokenLogKey(id string) string { return s.prefix + "{" + id + "}:rw:token" }
func (s *Store) failureLogKey(id, address string) string {
	return s.prefix + "{" + id + "}:rw:fail:" + address
}

// Keys of the failure limits of one presenting address for one client,
// beside the failure log (authenticate.go).
func (s *Store) failureTagsKey(id, address string) string {
	return s.prefix + "{" + id + "}:fail:tags:" + address
}
func (s *Store) repeatLogKey(id, address string) string {
	return s.prefix + "{" + id + "}:rw:repeat:" + address
}

// revokedTokenKey marks a revoked access token (RFC 7009) by its jti, until
// the token would have expired.
func (s *Store) revokedTokenKey(id, jti string) string { return s.prefix + "{" + id + "}:rt:" + jti }

// jtiKey marks an assertion's jti used (RFC 7523 section 3, rule 7) until
// a margin past the assertion's exp; mark is jtiMark's digest.
func (s *Store) jtiKey(id, mark string) string { return s.prefix + "{" + id + "}:jti:" + mark }

// dpopKey marks a DPoP proof used (RFC 9449 section 11.1) for as long as
// the proof is acceptable (dpop.ReplayTTL); mark is dpop.ReplayKey's
// digest of the proof's key and jti.
func (s *Store) dpopKey(id, mark string) string { return s.prefix + "{" + id + "}:dpop:" + mark }

// orgKey is an organisation's record (hash); orgAudit its audit trail
// (stream of audit.Record fields, about auditMaxLen).
func (s *Store) orgKey(slug string) string   { return s.prefix + "{org:" + slug + "}:org" }
func (s *Store) orgAudit(slug string) string { return s.prefix + "{org:" + slug + "}:audit" }

// seedLockKey serialises SeedSandbox runs (string, 30 s at most).
func (s *Store) seedLockKey() string { return s.prefix + "{org:" + SandboxOrgSlug + "}:seed-lock" }

// orgIndex is the set of every organisation's slug; orgClients the set of
// one organisation's client ids.
func (s *Store) orgIndex() string { return s.prefix + "{registry}:orgs" }
func (s *Store) orgClients(slug string) string {
	return s.prefix + "{registry}:org:" + slug + ":clients"
}

// usageKey is a client's usage history (hash: a field per minute of the
// last UsageMinutes, usagehistory.go), expiring usageTTL after its last
// recorded minute; usageSampleKey is the lease of one minute's sampling,
// taken by one replica (SET NX, two minutes).
func (s *Store) usageKey(id string) string { return s.prefix + "{" + id + "}:usage" }
func (s *Store) usageSampleKey(minute int64) string {
	return s.prefix + "{usage}:sample:" + strconv.FormatInt(minute, 10)
}
