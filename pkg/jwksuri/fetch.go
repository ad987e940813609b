package jwksuri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"go.opentelemetry.io/otel/codes"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// Limits of one fetch.
const (
	// FetchTimeout bounds a fetch: dial, TLS, headers and body.
	FetchTimeout = 3 * time.Second
	maxRedirects = 3
)

// Fetcher fetches clients' key sets under a Policy. It is safe for
// concurrent use.
type Fetcher struct {
	policy Policy
	client *http.Client
}

// NewFetcher returns a Fetcher whose HTTP client dials only addresses the
// policy allows, checked on the address actually dialled (after DNS), follows
// at most 3 redirects, each a jwks_uri the policy allows, uses no proxy and
// gives up after FetchTimeout.
func NewFetcher(p Policy) *Fetcher {
	dialer := &net.Dialer{Timeout: FetchTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: address %q", ErrRefused, address)
		}
		return p.refusedAddress(ap.Addr())
	}}
	return &Fetcher{policy: p, client: &http.Client{
		Timeout: FetchTimeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: FetchTimeout,
			ResponseHeaderTimeout: FetchTimeout, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// via holds the requests made so far, the first included: the
			// third redirect comes with three, a fourth with four.
			if len(via) > maxRedirects {
				return errors.New("jwks_uri: too many redirects")
			}
			if err := clients.CheckJWKSURI(req.URL.String(), p.AllowHTTP); err != nil {
				return fmt.Errorf("%w: redirect: %w", ErrRefused, err)
			}
			return nil
		},
	}}
}

// Fetch reads the key set at uri (at most clients.MaxJWKSBytes) and checks
// it as registered keys are (clients.CheckKeys). The error wraps ErrRefused
// when the policy refused the URL, a redirect or an address.
func (f *Fetcher) Fetch(ctx context.Context, uri string) (jwk.Set, error) {
	if err := clients.CheckJWKSURI(uri, f.policy.AllowHTTP); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	// The fetch's span (a traced request only) names the host alone: a
	// path or query could carry what the partner did not mean to publish.
	// The fetch carries no traceparent: the partner's host is outside the
	// platform, which passes its trace context on only inside.
	ctx, span := tracing.Start(ctx, tracing.SpanJWKSURIFetch)
	defer span.End()
	if span.IsRecording() {
		if u, err := url.Parse(uri); err == nil {
			span.SetAttributes(tracing.AttrServerAddress.String(u.Hostname()))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	set, err := jwk.Fetch(ctx, uri, jwk.WithHTTPClient(f.client), jwk.WithMaxFetchBodySize(clients.MaxJWKSBytes))
	if err == nil {
		err = clients.CheckKeys(set)
	}
	if err != nil {
		span.SetStatus(codes.Error, "jwks_uri fetch failed")
		return nil, err
	}
	return set, nil
}
