package clients

import "github.com/partnerapi/authplatform/pkg/luascript"

// The contracts of the registry's scripts (lua/): each script's KEYS, ARGV,
// reply and codes, by name and in order, declared here once. go generate
// writes from them each script's generated section (the locals k_NAME and
// a_NAME, the codes, reply(...)) and contracts_gen.go (authKeys, authArgs,
// authReply, authCode, ...); TestGenerated fails when either no longer
// matches, TestLuaLint when a script names KEYS or ARGV itself. Keys one
// script touches share the hash tag of their client or organisation
// (rediskeys.go), so every script runs on Redis Cluster. Only literals
// here: cmd/luacontract reads this file without compiling it. The scripts
// whose reply Go ignores (index_add, revoke_token, unlock) declare their
// codes only.
//
//go:generate go run ../luascript/cmd/luacontract contracts.go
var scriptContracts = []luascript.Contract{
	{
		Script: "lua/authenticate.lua", Go: "auth", Doc: "one client authentication",
		Keys: []luascript.Param{
			{Name: "client", Doc: "the client record"},
			{Name: "token_log", Doc: "its token requests' window"},
			{Name: "failure_log", Doc: "the presenting address's failures for this client (a window)"},
			{Name: "failure_tags", Doc: "the tags of the wrong credentials that address presented"},
			{Name: "repeat_log", Doc: "the window of their repeats"},
			{Name: "revoked_mark", Doc: "the revocation mark of a token to check (introspection), else unused"},
			{Name: "jti_mark", Doc: "the single-use mark of an assertion's jti (private_key_jwt), else unused"},
			{Name: "proof_mark", Doc: "the single-use mark of a DPoP proof (RFC 9449 section 11.1), else unused"},
		},
		Args: []luascript.Param{
			{Name: "digest", Doc: "the secret's digest, raw ('' for an assertion or a certificate)"},
			{Name: "digest_hex", Doc: "the same, hex (records written before digests were stored raw)"},
			{Name: "mode", Doc: "'token' or 'caller'"},
			{Name: "want_scopes", Type: "int", Doc: "requested scope bits; -1 every scope held, -2 a scope that cannot be granted"},
			{Name: "now_ms", Type: "int", Doc: "the limits' clock; -1 the Redis clock"},
			{Name: "window_ms", Type: "int", Doc: "the limits' window"},
			{Name: "failure_limit", Type: "int", Doc: "distinct wrong credentials per window"},
			{Name: "tag", Doc: "the credential's failure tag"},
			{Name: "repeat_limit", Type: "int", Doc: "repeats of refused credentials per window"},
			{Name: "method", Doc: "'secret', 'assertion' or 'certificate' (mutual TLS, RFC 8705 section 2)"},
			{Name: "verified", Type: "bool", Doc: "the assertion's signature and claims (or the certificate) verified against the keys (or subject) of keys_version"},
			{Name: "keys_version", Doc: "the version of the keys the assertion or certificate was verified against"},
			{Name: "jti_ttl_ms", Type: "int", Doc: "the jti mark's lifetime (not positive: refused)"},
			{Name: "check_secret_id", Doc: "the secret id of a token to check ('': none)"},
			{Name: "check_exp", Type: "int", Doc: "its exp (s)"},
			{Name: "proof", Doc: "the DPoP proof (RFC 9449 section 5): '' none, '0' refused by the caller, '1' verified"},
			{Name: "proof_ttl_ms", Type: "int", Doc: "the proof's mark's lifetime (dpop.ReplayTTL)"},
		},
		Reply: []luascript.Param{
			{Name: "code", Type: "code", Doc: "what the script decided"},
			{Name: "generation", Type: "int", Doc: "the client's credential generation"},
			{Name: "granted", Type: "int", Doc: "the granted scope bits"},
			{Name: "count", Type: "int", Doc: "token requests counted"},
			{Name: "wait_ms", Type: "int", Doc: "the limit's wait (window.lua)"},
			{Name: "limit", Type: "int", Doc: "token requests per window"},
			{Name: "repeated", Type: "bool", Doc: "a credential already refused, not checked again"},
			{Name: "secret_id", Type: "int", Doc: "the secret that authenticated"},
			{Name: "token_alive", Type: "bool", Doc: "the token checked is alive"},
		},
		Codes: []luascript.Code{
			{Name: "UNKNOWN", Value: 0, Doc: "no such client (failure accounted, then deleted)"},
			{Name: "BAD", Value: 1, Doc: "a wrong credential, or a revoked client"},
			{Name: "TOO_MANY", Value: 2, Doc: "a failure budget spent: not checked"},
			{Name: "BAD_SCOPE", Value: 3, Doc: "authenticated; the scope is not held"},
			{Name: "TOKEN_LIMITED", Value: 4, Doc: "authenticated; over the token limit"},
			{Name: "OK", Value: 5, Doc: "authenticated (and counted)"},
			{Name: "STALE_KEYS", Value: 6, Doc: "the assertion was verified against older keys: nothing done"},
			{Name: "PROOF_REQUIRED", Value: 7, Doc: "no DPoP proof from a dpop_bound client"},
			{Name: "PROOF_INVALID", Value: 8, Doc: "a DPoP proof the caller refused"},
			{Name: "PROOF_REPLAYED", Value: 9, Doc: "a DPoP proof used before"},
		},
	},
	{
		Script: "lua/admit.lua", Go: "admit", Doc: "one API request made with an access token",
		Keys: []luascript.Param{
			{Name: "client", Doc: "the client record"},
			{Name: "api_log", Doc: "its API requests' window"},
			{Name: "revoked_mark", Doc: "the token's revocation mark"},
			{Name: "replay_mark", Optional: true, Doc: "a DPoP-bound token's proof's replay mark (RFC 9449 section 11.1)"},
		},
		Args: []luascript.Param{
			{Name: "generation", Type: "int", Doc: "the token's credential generation"},
			{Name: "now_ms", Type: "int", Doc: "the limit's clock; -1 the Redis clock"},
			{Name: "window_ms", Type: "int", Doc: "the limit's window"},
			{Name: "secret_id", Type: "int", Doc: "the secret the token came from"},
			{Name: "exp", Type: "int", Doc: "the token's exp (s)"},
			{Name: "replay_ttl_ms", Type: "int", Optional: true, Doc: "the replay mark's lifetime, with replay_mark"},
		},
		Reply: []luascript.Param{
			{Name: "code", Type: "code", Doc: "what the script decided"},
			{Name: "count", Type: "int", Doc: "API requests counted"},
			{Name: "wait_ms", Type: "int", Doc: "the limit's wait (window.lua)"},
			{Name: "limit", Type: "int", Doc: "API requests per window"},
			{Name: "name", Doc: "what GET /api/v1/me/ shows: the client's name"},
			{Name: "audience", Doc: "its audience"},
			{Name: "org_name", Doc: "its organisation's name"},
			{Name: "org_slug", Doc: "and slug"},
			{Name: "environment", Doc: "its environment"},
		},
		Codes: []luascript.Code{
			{Name: "DEAD", Value: 0, Doc: "not active at that generation, the secret retired or the token revoked (RFC 7009)"},
			{Name: "ADMITTED", Value: 1, Doc: "in good standing, under the limit"},
			{Name: "LIMITED", Value: 2, Doc: "in good standing, over the limit"},
			{Name: "REPLAYED", Value: 3, Doc: "the proof's mark existed: not counted"},
		},
	},
	{
		Script: "lua/change.lua", Go: "change", Doc: "every change of an existing client, composed before the change's own file",
		Keys: []luascript.Param{
			{Name: "client", Doc: "the client record"},
			{Name: "audit", Doc: "its audit list"},
			{Name: "nonce", Doc: "the nonce of its last change (kept five minutes)"},
			{Name: "public_keys", Doc: "its public keys or certificate name (rotate_keys.lua; unused by the others)"},
		},
		Args: []luascript.Param{
			{Name: "at", Type: "int", Doc: "the change's time (ms)"},
			{Name: "audit_cap", Type: "int", Doc: "the audit list's cap"},
			{Name: "nonce", Doc: "this change's nonce"},
			{Name: "actor", Doc: "the actor's audit fields (audit.LineActor)"},
			{Name: "value", Doc: "the change's value: a digest, a secret id, a key set or certificate name, a limit, a flag ('' for none)"},
			{Name: "field", Optional: true, Doc: "the limit's field (set_limit.lua); 'tls_subject' when the value is a certificate name (rotate_keys.lua)"},
		},
		Reply: []luascript.Param{
			{Name: "code", Type: "code", Doc: "what the change did"},
			{Name: "generation", Type: "int", Doc: "the client's generation after it"},
		},
		Codes: []luascript.Code{
			{Name: "NOT_FOUND", Value: 0, Doc: "no such client"},
			{Name: "CHANGED", Value: 1, Doc: "changed (or the same change, by its nonce, made before)"},
			{Name: "REVOKED", Value: -1, Doc: "the client is revoked"},
			{Name: "WRONG_METHOD", Value: -2, Doc: "not for the client's authentication method"},
			{Name: "CONFLICT", Value: -3, Doc: "two secrets already, or the only one"},
			{Name: "NO_SUCH_SECRET", Value: -4, Doc: "the client holds no such secret"},
		},
	},
	{
		Script: "lua/create_client.lua", Go: "createClient", Doc: "a whole client record, or nothing if the id exists",
		Keys: []luascript.Param{
			{Name: "client", Doc: "the record"},
			{Name: "audit", Doc: "its audit list"},
			{Name: "public_keys", Doc: "its public keys (or tls_client_auth subject)"},
		},
		Args: []luascript.Param{
			{Name: "audit_line", Doc: "the first audit line (audit.Record.Line)"},
			{Name: "audit_cap", Type: "int", Doc: "the audit list's cap"},
			{Name: "key_set", Doc: "the public keys, or a tls_client_auth client's subject ('' for a secret client)"},
			{Name: "fields", Rest: true, Doc: "the record's field-value pairs"},
		},
		Reply: []luascript.Param{{Name: "code", Type: "code", Doc: "created or not"}},
		Codes: []luascript.Code{
			{Name: "EXISTS", Value: 0, Doc: "the id exists"},
			{Name: "CREATED", Value: 1, Doc: "created (or the same creation, by its secret digest or nonce, made before)"},
		},
	},
	{
		Script: "lua/create_org.lua", Go: "createOrg", Doc: "an organisation's record and first audit entry, or nothing if the slug is taken",
		Keys: []luascript.Param{
			{Name: "org", Doc: "the record"},
			{Name: "audit", Doc: "its audit stream"},
		},
		Args: []luascript.Param{
			{Name: "slug", Doc: "the organisation's slug"},
			{Name: "name", Doc: "its name"},
			{Name: "environment", Doc: "its environment"},
			{Name: "created_at", Doc: "its creation time (RFC 3339)"},
			{Name: "audit_cap", Type: "int", Doc: "the audit stream's cap"},
			{Name: "nonce", Doc: "a nonce kept in the record"},
			{Name: "entry", Rest: true, Doc: "the audit entry's field-value pairs (audit.Record.Fields)"},
		},
		Reply: []luascript.Param{{Name: "code", Type: "code", Doc: "created or not"}},
		Codes: []luascript.Code{
			{Name: "TAKEN", Value: 0, Doc: "the slug is taken"},
			{Name: "CREATED", Value: 1, Doc: "created (or the same creation, by its nonce, made before)"},
		},
	},
	{
		Script: "lua/index_add.lua", Go: "index", Doc: "a member added to an index set",
		Keys: []luascript.Param{{Name: "set", Doc: "the index set"}},
		Args: []luascript.Param{{Name: "member", Doc: "the member"}},
		Codes: []luascript.Code{
			{Name: "PRESENT", Value: 0, Doc: "it was a member"},
			{Name: "ADDED", Value: 1, Doc: "added"},
		},
	},
	{
		Script: "lua/revoke_token.lua", Go: "revokeToken", Doc: "one access token revoked (RFC 7009)",
		Keys: []luascript.Param{
			{Name: "mark", Doc: "the token's revocation mark"},
			{Name: "client", Doc: "the client record"},
		},
		Args: []luascript.Param{
			{Name: "ttl_ms", Type: "int", Doc: "the mark's lifetime"},
			{Name: "exp", Type: "int", Doc: "the token's exp (s)"},
		},
		Codes: []luascript.Code{{Name: "REVOKED", Value: 1, Doc: "marked"}},
	},
	{
		Script: "lua/unlock.lua", Go: "unlock", Doc: "a lock deleted if it still holds this holder's token",
		Keys: []luascript.Param{{Name: "lock", Doc: "the lock"}},
		Args: []luascript.Param{{Name: "token", Doc: "the holder's token"}},
		Codes: []luascript.Code{
			{Name: "NOT_HELD", Value: 0, Doc: "not held by this holder"},
			{Name: "DELETED", Value: 1, Doc: "deleted"},
		},
	},
}
