// Package console is the operator web console, served at /console/ on the
// token service's admin listener (the same origin as /admin/v1/, off when
// that listener is off).
//
// The console is a view over the admin API, never a second implementation
// of it: every page and every action is one or more admin API calls made in
// process (Deps.API, the admin API's own routes), with the session's
// operator token as the bearer token. So each click is admitted exactly as
// an admin API call is (package admission: a revoked or rotated operator is
// signed out at the next click), each change runs the one operation of
// authserver/operations behind its handler, is scoped (admin.read,
// admin.write), audited, and made idempotent by an Idempotency-Key that the
// form carries (a double click or a resubmitted form replays the first
// answer).
//
// Sign-in exchanges an operator client's id and secret at the token
// endpoint (Deps.Token, in process, from the caller's address: failed
// sign-ins spend the same failure budget as the token endpoint's), and the
// session is the ordinary operator token in a cookie (HttpOnly,
// SameSite=Strict, Secure over TLS, Path=/console/), living as long as the
// token.
//
// Every state-changing request carries a CSRF token bound to the session
// (an HMAC of the session token) and must come from the console's own
// origin; every answer has a Content-Security-Policy without unsafe-inline,
// frame-ancestors 'none' and X-Frame-Options: DENY; the templates
// (html/template) escape what operators typed, and bidi controls are shown
// as visible escapes. deploy/docs/console.md is the operator's guide.
package console
