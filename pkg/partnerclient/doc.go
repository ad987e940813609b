// Package partnerclient is the Go client of the Partner Integration API: it
// gets access tokens with the OAuth 2.0 client credentials grant (RFC 6749
// section 4.4) and calls the API with them, behaving as the API's
// documentation recommends for every client:
//
//   - it caches the token and renews it RenewBefore (60 s) before it
//     expires, with one token request in flight however many goroutines ask
//     at once (golang.org/x/sync/singleflight);
//   - on a 401 from the API it drops the cached token, gets a fresh one and
//     retries the request once (only a request whose body can be replayed:
//     no body, or http.Request.GetBody set);
//   - on a 429, from the token endpoint or the API, it waits the seconds of
//     Retry-After (RFC 9110 section 10.2.3), unless that is longer than
//     MaxWait or than the request's context allows, then retries;
//   - on a 5xx or a failed connection to the token endpoint, and on a 5xx
//     from the API, it retries with exponential backoff and jitter, at most
//     MaxRetries times.
//
// [TokenSource] implements golang.org/x/oauth2's oauth2.TokenSource, so it
// plugs into any code written for that package; [Transport] is an
// http.RoundTripper that adds "Authorization: Bearer" and does the retries;
// [NewHTTPClient] wraps both in an *http.Client; [Client] adds typed calls
// of the API's endpoints.
//
// Errors are typed and work with errors.As: a [*TokenError] carries the
// token endpoint's OAuth "error" and "error_description" (RFC 6749 section
// 5.2), an [*APIError] the API's "detail"; both carry the HTTP status and
// Retry-After. Neither, nor any String or log value of this package,
// contains the client secret or an access token.
//
// The package imports nothing of the servers; it is what a partner imports.
// Its behaviour against the real servers is tested in deploy/e2e/sdk.
package partnerclient
