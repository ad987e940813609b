package clientip

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Trust is the set of proxy networks whose forwarded headers are believed.
type Trust struct {
	proxies []netip.Prefix
}

// ParseTrust reads a comma-separated list of CIDRs or addresses
// (e.g. "127.0.0.1/32,10.0.0.0/8"); "" trusts no proxy.
func ParseTrust(list string) (Trust, error) {
	var t Trust
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return Trust{}, fmt.Errorf("trusted proxy %q: not an address or CIDR", s)
			}
			t.proxies = append(t.proxies, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Trust{}, fmt.Errorf("trusted proxy %q: not an address or CIDR", s)
		}
		t.proxies = append(t.proxies, p.Masked())
	}
	return t, nil
}

// Trusted reports whether addr is a configured proxy.
func (t Trust) Trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range t.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// FromProxy reports whether r's connection comes from a trusted proxy.
func (t Trust) FromProxy(r *http.Request) bool {
	a, ok := peer(r)
	return ok && t.Trusted(a)
}

// Of returns the client address of r: the peer's address, or, when the peer
// is a trusted proxy, the right-most X-Forwarded-For entry that is not itself
// a trusted proxy (entries left of it could be forged by the client).
func (t Trust) Of(r *http.Request) netip.Addr {
	a, ok := peer(r)
	if !ok {
		return netip.Addr{}
	}
	if !t.Trusted(a) {
		return a
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		h = h.Unmap()
		if !t.Trusted(h) {
			return h
		}
		a = h
	}
	return a
}

func peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// BaseURL returns the scheme and host the request was sent to
// ("https://api.example.com"): those a trusted proxy forwarded
// (X-Forwarded-Proto when "http" or "https", X-Forwarded-Host), else the
// connection's (https when it is TLS) and the Host header's. Forwarded
// values from any other peer are ignored. The Host header is the caller's
// word all the same: this is for the links of a document served without a
// configured base URL, never for what a security check compares with (a
// DPoP proof's htu is checked against configuration only, package
// admission). The host is not validated: callers check it.
func (t Trust) BaseURL(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if t.FromProxy(r) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if h := r.Header.Get("X-Forwarded-Host"); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}
