package clients

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Window of every per-minute limit.
const Window = time.Minute

func str(v any) string { s, _ := v.(string); return s }

// authenticateScript authenticates a client in one round trip: by the
// digest of the secret it presents (either of its secrets) or by a client
// assertion the caller verified (private_key_jwt, RFC 7523 section 2.2),
// and, for a token request, checks the requested scope and counts the
// request; for introspection it also checks the token looked at. Its keys,
// arguments and reply are documented in authenticate.lua.
//
// The digest is compared there with a plain string comparison, not in
// constant time: what is compared is a SHA-256 digest of a 220-bit random
// secret, and learning how much of a stored digest an attempt's digest
// matches tells nothing about the secret (it would take SHA-256 preimages
// to use). Unknown, wrong-secret and revoked attempts take this one path,
// the same Redis commands in the same order: an unknown id counts a failure
// and leaves a tag like a wrong secret, on keys it deletes before the
// script returns, so the time of an invalid_client does not tell which ids
// exist and made-up ids leave nothing behind. (What remains: a known id
// carries its failures from one attempt to the next, an unknown one does
// not, so repeated attempts for one id from one address still differ, most
// visibly when the failure budget answers slow_down after the limit of
// distinct wrong secrets; keeping failures for made-up ids would cost
// memory per made-up id.)
//
// Failures are limited per (address, client) so that a stale integration
// cannot lock out its own valid siblings behind the same address (issue 21):
//
//   - The failure log (KEYS[3]) counts DISTINCT wrong credentials: only
//     those are guesses. A new one is checked only while fewer than the
//     failure limit were counted in the last minute; past it, new ones are
//     refused unchecked, so at most the limit of guesses is ever checked
//     per address, client and minute, whatever the concurrency. The right
//     credential presented then is refused too: that address is guessing
//     at that client's secret, and telling it when it guessed right is
//     what the limit exists to prevent.
//   - Each wrong credential counted leaves its tag (KEYS[4], a hash of tag
//     -> the time it was counted): an attempt whose tag's failure still
//     counts in the failure log is a credential already known to be wrong
//     (a rotated-out secret a stale instance keeps sending, an assertion
//     replayed), answered as wrong again without being checked or counted
//     as a guess; such repeats count in their own log (KEYS[5]) under
//     their own, higher, limit, past which they alone are slowed down. So
//     a repeated stale secret holds one slot of the budget and the right
//     secret from the same address keeps working. Repeats do not refresh
//     a tag: a guesser repeating its old guesses would otherwise keep ever
//     more tags alive.
//   - Memory stays bounded by the limit: a tag is added only with a
//     counted failure, at most the limit in any minute, and once the hash
//     holds the limit of tags the ones whose failures no longer count are
//     dropped first. The hash expires a minute after its newest tag.
//
// A wrong or replayed assertion is a failure like a wrong secret: the same
// invalid_client, the same limits (RFC 7521 section 4.2.1). But an
// assertion whose signature and claims verified (the caller's check) is
// not refused by a spent failure budget: its signature proves the key, so
// it is no guess, and failed assertions with made-up kids from a
// neighbour behind the same address must not lock the client out. Its
// jti, and the client's own token limit, still decide.
//
// The script is lua/authenticate.lua after pkg/ratelimit/window.lua
// (scripts.go); its keys, arguments, reply and codes are its contract
// (contracts.go), from which authKeys, authArgs, authReply and authCode
// are generated.

// failureTag is what the failure limits remember of a wrong credential: 8
// bytes of a SHA-256 of its digest (of a secret) or of the assertion, under
// a label of its own, so nothing in Redis besides the client record holds
// (a part of) any secret's digest. 64 bits keep the chance that the right
// credential shares a tag with one of the at most FailureLimit wrong ones
// negligible (one in 2^58 for 60).
func failureTag(d [32]byte) string {
	t := sha256.Sum256(append([]byte("partnerapi failed secret\x00"), d[:]...))
	return string(t[:8])
}

// AuthOutcome is what Authenticate decided.
type AuthOutcome int

// Outcomes of Authenticate.
const (
	// BadCredentials: an unknown client, a wrong secret or assertion, or a
	// revoked client, alike (RFC 6749 section 5.2, invalid_client).
	BadCredentials AuthOutcome = iota
	// TooManyFailures: the presenting address has used up its budget of
	// distinct wrong credentials for this client, and the credential was
	// not checked; or (Repeated) its budget of repeats of credentials
	// already known to be wrong.
	TooManyFailures
	// InvalidScope: authenticated, but the requested scope is not held.
	InvalidScope
	// TokenLimited: authenticated, but over the client's token limit.
	TokenLimited
	// Authenticated: the credential matches an active client (and, for a
	// token request, the request was counted under its limit).
	Authenticated
	// StaleKeys: the assertion was verified against keys the client no
	// longer has (Assertion.KeysVersion is not the client's): nothing was
	// counted; load the client's keys again, verify again and retry.
	StaleKeys
	// The DPoP outcomes of a token request (RFC 9449 section 5), each
	// decided after the client authenticated and before its token limit
	// (nothing counted): ProofRequired, no proof from a client registered
	// with dpop_bound_access_tokens (section 5.2); ProofInvalid, a proof
	// the caller refused (Attempt.DPoP.Verified false); ProofReplayed, a
	// proof whose jti was used before (section 11.1).
	ProofRequired
	ProofInvalid
	ProofReplayed
)

// Attempt is one client authentication: on the token endpoint (Token), by
// the caller of introspection or of revocation.
type Attempt struct {
	ClientID string
	// Secret is hashed here; only its digest goes to Redis. Empty when the
	// client authenticates with an assertion.
	Secret string
	// Assertion is set when the client authenticates with a JWT assertion
	// (private_key_jwt) instead of a secret.
	Assertion *AssertionCheck
	// Certificate is set when the client authenticates with the
	// certificate of its mutual-TLS connection (RFC 8705 section 2).
	Certificate *CertificateCheck
	// Address identifies who presents the credentials (an IPv4 address or
	// an IPv6 /64): failures are counted per address and client, so a
	// stale integration never locks out its neighbours behind the same
	// address, nor anyone out of another client.
	Address string
	// FailureLimit is how many distinct wrong credentials for this client
	// one address may present in any minute before its attempts with a new
	// one are refused unchecked. One already found wrong (a stale
	// instance's rotated-out secret) is not a new guess: see RepeatLimit.
	FailureLimit int64
	// RepeatLimit is how many attempts in any minute one address may make
	// for this client with credentials it already presented and had
	// refused in the last minute, before those (and only those) are
	// answered TooManyFailures (0: 10 times FailureLimit).
	RepeatLimit int64
	// Token marks a token request: Scope is checked and the request counted
	// against the client's token limit.
	Token bool
	// Scope is the requested scope (nil: every scope the client holds).
	// BadScope marks a request naming a scope that cannot be granted (not
	// a scope of the catalogue, or malformed): once authenticated, it is
	// InvalidScope.
	Scope    []string
	BadScope bool
	// Check is a token of this client whose standing is read in the same
	// round trip (introspection): Authentication.TokenAlive.
	Check *TokenRef
	// DPoP is the DPoP proof of a token request (RFC 9449 section 5) as
	// the caller checked it (dpop.Verify); nil when the request carried no
	// DPoP header. A verified proof's jti is marked used in the same round
	// trip, once the client authenticated.
	DPoP *ProofCheck
	// Now is the clock of the limits (nil: the Redis server's).
	Now func() time.Time
}

// AssertionCheck is what the caller learnt of a client assertion (RFC 7523
// section 3) before Authenticate: whether its signature and claims
// verified against the client's keys of KeysVersion (Store.ClientKeys).
type AssertionCheck struct {
	// Raw is the assertion as presented: a wrong one's failure tag.
	Raw string
	// Verified reports that the signature verified with one of the
	// client's keys and the claims hold (iss, sub, aud, exp).
	Verified bool
	// KeysVersion is the version of the keys it was verified against.
	KeysVersion string
	// JTI is its "jti", single use: marked used until Expires, which must
	// be at least as late as the assertion is accepted (its "exp" plus the
	// clock skew tolerated); an assertion whose Expires has passed is
	// refused, as its jti could not be remembered.
	JTI     string
	Expires time.Time
}

// CertificateCheck is what the caller learnt of a mutual-TLS client
// certificate (RFC 8705 section 2) before Authenticate: whether it
// authenticates the client by its registration of KeysVersion
// (Store.ClientKeys): for tls_client_auth its chain to the operator's
// client CA and its subject (TLSSubject.Matches, VerifyChain), for
// self_signed_tls_client_auth its key (KeyRegistered).
type CertificateCheck struct {
	// Thumbprint is the certificate's SHA-256 (x5t#S256): a refused
	// one's failure tag.
	Thumbprint  string
	Verified    bool
	KeysVersion string
}

// ProofCheck is what the caller learnt of a token request's DPoP proof.
type ProofCheck struct {
	// Verified reports that dpop.Verify accepted it; Proof is then what
	// Verify returned. An unverified proof is still passed, so that its
	// refusal is answered only to an authenticated client.
	Verified bool
	Proof    dpop.Proof
	// TTL is how long its single-use mark lives: dpop.ReplayTTL of the
	// window and leeway it was verified with.
	TTL time.Duration
}

// Authentication is the result of Authenticate.
type Authentication struct {
	Outcome AuthOutcome
	// Known reports whether the id names a client at all.
	Known bool
	// Checked reports whether this attempt's credential was compared
	// against the client's stored state (a secret's digest, or a verified
	// assertion and its jti): every attempt but those refused unchecked by
	// a failure budget (TooManyFailures), the repeats of a credential
	// already found wrong (Repeated) and the stale-keys retries
	// (StaleKeys). An unknown id counts as checked, as does an id of the
	// wrong form (never sent to Redis): it costs the same hashing as a
	// comparison, and is answered alike. The token service counts these
	// (partnerapi_client_credentials_checked_total).
	Checked bool
	// Repeated reports, for BadCredentials and TooManyFailures, a
	// credential this address already presented for this client in the
	// last minute and had refused: it was not checked again, and counted
	// against Attempt.RepeatLimit, not FailureLimit.
	Repeated bool
	// Generation is the client's credential generation (Authenticated,
	// TokenLimited, InvalidScope).
	Generation int64
	// SecretID is the id of the secret that authenticated (1 for a client
	// authenticated by an assertion): the token records it.
	SecretID int64
	// Scopes are the granted scopes, in the catalogue's order.
	Scopes []string
	// TokenAlive reports, for Attempt.Check, that the token's secret is
	// still held and the token was not revoked (its generation is the
	// caller's to compare with Generation).
	TokenAlive bool
	// Decision is the token limit's (Token requests) or, for
	// TooManyFailures, when the budget that refused lets the address try
	// again.
	Decision ratelimit.Decision
	// Limit is the client's token requests per minute.
	Limit int64
}

// Authenticate checks a client's credentials in one Redis round trip and,
// for a token request, its requested scope and token limit. Unknown,
// revoked and wrong attempts cost the same hashing and the same one script,
// and come back alike as BadCredentials; an attempt refused by the failure
// budget (TooManyFailures) is not checked at all, nor is a credential the
// address already had refused (Repeated). See authenticateScript.
func (s *Store) Authenticate(ctx context.Context, a Attempt) (Authentication, error) {
	var d Digest
	method, raw, hexd := "secret", "", ""
	tag := ""
	switch {
	case a.Certificate != nil:
		method = "certificate"
		// With the registration it was checked against: a certificate
		// refused under the old name or keys is checked again once they
		// change (rotate-keys), not remembered as wrong
		// (TestRenamedCertificate in deploy/e2e/mtls).
		tag = failureTag(sha256.Sum256([]byte("certificate\x00" + a.Certificate.KeysVersion + "\x00" + a.Certificate.Thumbprint)))
	case a.Assertion != nil:
		method = "assertion"
		tag = failureTag(sha256.Sum256([]byte(a.Assertion.Raw)))
	default:
		d = DigestOf(a.Secret)
		raw, hexd, tag = string(d[:]), hex.EncodeToString(d[:]), failureTag(d)
	}
	if !ValidClientID(a.ClientID) {
		// The same hashing as any attempt: checked, as any unknown id.
		return Authentication{Outcome: BadCredentials, Checked: true}, nil
	}
	want := int64(-1)
	switch {
	case a.BadScope:
		want = -2
	case a.Scope != nil:
		want = scopeBits(a.Scope)
		if !knownScopes(a.Scope) {
			want = -2
		}
	}
	mode := "caller"
	if a.Token {
		mode = "token"
	}
	repeatLimit := a.RepeatLimit
	if repeatLimit <= 0 {
		repeatLimit = 10 * a.FailureLimit
	}
	args := authArgs{Digest: raw, DigestHex: hexd, Mode: mode, WantScopes: want, NowMS: ratelimit.NowArg(a.Now),
		WindowMS: Window.Milliseconds(), FailureLimit: a.FailureLimit, Tag: tag, RepeatLimit: repeatLimit,
		Method: method, JTITTLMS: 1}
	keys := authKeys{Client: s.clientKey(a.ClientID), TokenLog: s.tokenLogKey(a.ClientID),
		FailureLog: s.failureLogKey(a.ClientID, a.Address), FailureTags: s.failureTagsKey(a.ClientID, a.Address),
		RepeatLog: s.repeatLogKey(a.ClientID, a.Address), RevokedMark: s.revokedTokenKey(a.ClientID, ""),
		JTIMark: s.jtiKey(a.ClientID, ""), ProofMark: s.dpopKey(a.ClientID, "")}
	if c := a.Certificate; c != nil {
		args.Verified, args.KeysVersion = c.Verified, c.KeysVersion
	}
	if as := a.Assertion; as != nil && a.Certificate == nil {
		args.Verified, args.KeysVersion = as.Verified, as.KeysVersion
		keys.JTIMark = s.jtiKey(a.ClientID, jtiMark(as.JTI))
		// Kept a second past Expires (exp, rounded down to seconds, plus
		// the leeway it is accepted with). An assertion whose jti cannot
		// be remembered (Expires passed) is refused: accepting it would
		// leave it replayable.
		now := time.Now
		if a.Now != nil {
			now = a.Now
		}
		if left := as.Expires.Sub(now()); left > 0 {
			args.JTITTLMS = left.Milliseconds() + 1000
		} else {
			args.Verified = false
		}
	}
	if p := a.DPoP; p != nil && a.Token {
		args.Proof = "0"
		if p.Verified && p.TTL > 0 {
			args.Proof, args.ProofTTLMS = "1", p.TTL.Milliseconds()
			keys.ProofMark = s.dpopKey(a.ClientID, dpop.ReplayKey(p.Proof))
		}
	}
	if c := a.Check; c != nil && c.ClientID == a.ClientID {
		keys.RevokedMark, args.CheckSecretID, args.CheckExp = s.revokedTokenKey(a.ClientID, c.ID), strconv.FormatInt(c.SecretID, 10), c.ExpiresAt
	}
	res, err := s.runHot(ctx, authenticateScript, keys.list(), args.list()...).Result()
	var r authReply
	if err == nil {
		err = r.decode(res)
	}
	if err != nil {
		return Authentication{}, unavailable("authenticate", err)
	}
	out := Authentication{Known: r.Code != authUnknown, Repeated: r.Repeated, SecretID: r.SecretID, TokenAlive: r.TokenAlive}
	switch r.Code {
	case authUnknown, authBad:
		out.Outcome = BadCredentials
	case authTooMany:
		out.Outcome = TooManyFailures
		flimit := a.FailureLimit
		if out.Repeated {
			flimit = repeatLimit
		}
		out.Decision = ratelimit.Decided(false, flimit, r.WaitMS)
	case authStaleKeys:
		out.Outcome = StaleKeys
	case authBadScope:
		out.Outcome = InvalidScope
	case authTokenLimited:
		out.Outcome = TokenLimited
	case authOK:
		out.Outcome = Authenticated
	case authProofRequired:
		out.Outcome = ProofRequired
	case authProofInvalid:
		out.Outcome = ProofInvalid
	case authProofReplayed:
		out.Outcome = ProofReplayed
	default:
		return Authentication{}, unavailable("authenticate", fmt.Errorf("unexpected reply %+v (code %v)", r, r.Code))
	}
	// The client authenticated: its generation and the granted scope, and
	// for a counted token request its limit's decision.
	switch out.Outcome {
	case TokenLimited, Authenticated:
		if a.Token {
			out.Decision = ratelimit.Decided(r.Code == authOK, r.Count, r.WaitMS)
			out.Limit = r.Limit
		}
		fallthrough
	case InvalidScope, ProofRequired, ProofInvalid, ProofReplayed:
		out.Generation, out.Scopes = r.Generation, scopesFrom(strconv.FormatInt(r.Granted, 10))
	}
	out.Checked = out.Outcome != TooManyFailures && out.Outcome != StaleKeys && !out.Repeated
	return out, nil
}

// jtiMark is the key suffix that marks an assertion's jti used: a digest,
// so a client's arbitrary jti never makes an arbitrary key.
func jtiMark(jti string) string {
	h := sha256.Sum256([]byte(jti))
	return hex.EncodeToString(h[:16])
}

// knownScopes reports whether every name is a scope of the catalogue.
func knownScopes(names []string) bool {
	for _, n := range names {
		if !slices.Contains(scopeCatalogue, n) {
			return false
		}
	}
	return true
}
