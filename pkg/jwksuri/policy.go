package jwksuri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// Policy is what the operator allows of clients' jwks_uri. The zero Policy
// is the default: https only, global unicast addresses only.
type Policy struct {
	// AllowHTTP lets a jwks_uri be http, not only https
	// (JWKS_URL_ALLOW_HTTP).
	AllowHTTP bool
	// AllowPrivate lets it reach any address, the refused ones of Classify
	// included: a partner inside the operator's own network; tests
	// (JWKS_URL_ALLOW_PRIVATE).
	AllowPrivate bool
	// Resolver resolves a jwks_uri's host at registration (nil:
	// net.DefaultResolver).
	Resolver Resolver
}

// Resolver resolves a host name to its addresses (*net.Resolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrRefused marks a jwks_uri fetch refused by the policy: its URL, a
// redirect, or an address it would dial.
var ErrRefused = errors.New("refused by the jwks_uri policy")

// refusedAddress says why addr may not be dialled (nil: it may).
func (p Policy) refusedAddress(addr netip.Addr) error {
	why, err := p.whyRefused(addr)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrRefused, why, err)
	case why != "":
		return fmt.Errorf("%w: %s", ErrRefused, why)
	}
	return nil
}

// whyRefused says why addr may not be dialled ("": it may), in words an
// operator may read; the error, if any, is what kept the policy from
// knowing, for the log.
func (p Policy) whyRefused(addr netip.Addr) (string, error) {
	if p.AllowPrivate {
		return "", nil
	}
	own, err := OwnAddresses()
	if err != nil {
		return "the host's own addresses are unknown", err
	}
	if why := Classify(addr, own); why != "" {
		return fmt.Sprintf("address %s is %s (JWKS_URL_ALLOW_PRIVATE=true allows it)", addr, why), nil
	}
	return "", nil
}

// CheckRegistration checks a jwks_uri before it is registered, as the
// token service will fetch it: the URL's form (clients.CheckJWKSURI, http
// only with AllowHTTP) and every address its host resolves to (Classify),
// unless AllowPrivate. A name that does not resolve is refused too: it
// cannot be fetched. The error wraps clients.ErrInvalid and says which
// address is refused and why. The fetch checks the addresses again when it
// dials (a name may resolve elsewhere by then).
func (p Policy) CheckRegistration(ctx context.Context, raw string) error {
	if err := clients.CheckJWKSURI(raw, p.AllowHTTP); err != nil {
		return err
	}
	if p.AllowPrivate {
		return nil
	}
	u, _ := url.Parse(raw) // parsed by CheckJWKSURI
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		var r Resolver = net.DefaultResolver
		if p.Resolver != nil {
			r = p.Resolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
			// The resolver's words (and its server's address) stay in
			// the log.
			refusal := clients.Invalidf("jwks_uri %q: host %q does not resolve, so it cannot be fetched", raw, host)
			refusal.Cause = err
			return refusal
		}
	}
	var why []string
	var causes []error
	for _, a := range addrs {
		if w, err := p.whyRefused(a.Unmap()); w != "" {
			why, causes = append(why, w), append(causes, err)
		}
	}
	if len(why) > 0 {
		refusal := clients.Invalidf("jwks_uri %q: the token service does not fetch from %s: %s", raw, host, strings.Join(why, "; "))
		refusal.Cause = errors.Join(causes...)
		return refusal
	}
	return nil
}
