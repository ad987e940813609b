// Package tokenholes holds the tests of the token service's holes of issue
// 59 on the real binaries: authserver and resourceserver built as the
// Dockerfile builds them and run as processes (package e2etest) on the
// real Redis under a key prefix of each test's own, every port of theirs in
// 18100-18199. Each test fails on the code the issue was filed against and
// passes on the fix:
//
//   - TestSignatureCost (hole 6): unauthenticated token requests whose DPoP
//     proof carries an RSA key of 16,384 bits, and valid ES384 proofs from
//     an address whose ceiling is spent, cost the token service's process
//     at most twice the CPU (utime+stime in /proc) of as many plain
//     refused requests;
//   - TestAssertionRules (hole 9): client assertions typed as access
//     tokens or DPoP proofs and audiences beside a foreign one are refused;
//     EdDSA and Ed25519 name one algorithm in assertions and DPoP proofs,
//     and the metadata advertises both;
//   - TestVerifiedAssertionNotLockedOut (hole 10): a neighbour's failed
//     assertions with made-up kids do not put the client's valid ones from
//     the same address into 429;
//   - TestCeilingPerMinute (hole 11): the per-address ceiling admits 600
//     failures and then none for the rest of the minute (the long suite
//     also checks every 60 s of a 61 s flood);
//   - TestInvalidClientTiming (hole 12, long suite): a revoked client with
//     its right secret, a wrong secret and an unknown id are answered in
//     times within 10% of each other;
//   - TestJSONGrantTypeNotAString (hole 13);
//   - TestResourceServerStartedFirst (hole 15): a resource server started
//     before the token service loads its keys a moment after the token
//     service answers, with no request asking it to.
//
// The tests need Redis (REDIS_URL or 127.0.0.1:6379); under CI=true a
// missing Redis fails them, -short skips them.
package tokenholes
