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
	if p.AllowPrivate {
		return nil
	}
	own, err := OwnAddresses()
	if err != nil {
		return fmt.Errorf("%w: the host's own addresses are unknown: %v", ErrRefused, err)
	}
	if why := Classify(addr, own); why != "" {
		return fmt.Errorf("%w: address %s is %s (JWKS_URL_ALLOW_PRIVATE=true allows it)", ErrRefused, addr, why)
	}
	return nil
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
		return fmt.Errorf("%w: %w", clients.ErrInvalid, err)
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
			return fmt.Errorf("%w: jwks_uri %q: host %q does not resolve, so it cannot be fetched: %v", clients.ErrInvalid, raw, host, err)
		}
	}
	var why []string
	for _, a := range addrs {
		if err := p.refusedAddress(a.Unmap()); err != nil {
			why = append(why, strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("%w: jwks_uri %q: the token service does not fetch from %s: %s", clients.ErrInvalid, raw, host, strings.Join(why, "; "))
	}
	return nil
}
