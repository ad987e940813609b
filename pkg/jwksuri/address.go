package jwksuri

import (
	"fmt"
	"net"
	"net/netip"
)

// block is a range of addresses a jwks_uri may never reach, with the
// registry entry (or other document) that sets it apart.
type block struct {
	prefix netip.Prefix
	name   string
}

func b(prefix, name string) block { return block{netip.MustParsePrefix(prefix), name} }

// specialIPv4 is the IANA IPv4 Special-Purpose Address Registry (RFC 6890,
// iana.org/assignments/iana-ipv4-special-registry), every entry, plus
// multicast. Entries the registry marks globally reachable (AS112, AMT,
// the anycast service addresses of 192.0.0.0/24) are refused as well: they
// are protocol services, never a partner's web server.
var specialIPv4 = []block{
	b("0.0.0.0/8", `"this network" (RFC 791 section 3.2)`),
	b("10.0.0.0/8", "private-use (RFC 1918)"),
	b("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"),
	b("127.0.0.0/8", "loopback (RFC 1122 section 3.2.1.3)"),
	b("169.254.0.0/16", "link-local (RFC 3927)"),
	b("172.16.0.0/12", "private-use (RFC 1918)"),
	b("192.0.0.0/24", "IETF protocol assignments (RFC 6890 section 2.1; DS-Lite RFC 7335, PCP and TURN anycast RFC 7723, RFC 8155, NAT64 discovery RFC 8880)"),
	b("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)"),
	b("192.31.196.0/24", "AS112-v4 (RFC 7535)"),
	b("192.52.193.0/24", "AMT (RFC 7450)"),
	b("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
	b("192.168.0.0/16", "private-use (RFC 1918)"),
	b("192.175.48.0/24", "direct delegation AS112 service (RFC 7534)"),
	b("198.18.0.0/15", "benchmarking (RFC 2544)"),
	b("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)"),
	b("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)"),
	b("224.0.0.0/4", "multicast (RFC 5771)"),
	b("240.0.0.0/4", "reserved (RFC 1112 section 4), with limited broadcast 255.255.255.255/32 (RFC 919)"),
}

// specialIPv6 is the IANA IPv6 Special-Purpose Address Registry (RFC 6890,
// iana.org/assignments/iana-ipv6-special-registry), every entry but the
// forms unwrapped before (unwrap), plus what the IPv6 address space
// registry does not allocate as global unicast (everything outside
// 2000::/3 is refused by Classify before this table). Entries the registry
// marks globally reachable are refused for the reason given at
// specialIPv4.
var specialIPv6 = []block{
	b("::/128", "unspecified (RFC 4291 section 2.5.2)"),
	b("::1/128", "loopback (RFC 4291 section 2.5.3)"),
	b("::/96", "IPv4-compatible, deprecated (RFC 4291 section 2.5.5.1)"),
	b("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"),
	b("100::/64", "discard-only (RFC 6666)"),
	b("100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)"),
	b("2001::/23", "IETF protocol assignments (RFC 2928; benchmarking RFC 5180, AMT RFC 7450, AS112 RFC 7535, ORCHIDv2 RFC 7343, drone DETs RFC 9374)"),
	b("2001:db8::/32", "documentation (RFC 3849)"),
	b("2620:4f:8000::/48", "direct delegation AS112 service (RFC 7534)"),
	b("3fff::/20", "documentation (RFC 9637)"),
	b("5f00::/16", "segment routing SIDs (RFC 9602)"),
	b("fc00::/7", "unique-local (RFC 4193)"),
	b("fe80::/10", "link-local unicast (RFC 4291 section 2.5.6)"),
	b("fec0::/10", "site-local, deprecated (RFC 3879)"),
	b("ff00::/8", "multicast (RFC 4291 section 2.7)"),
}

// globalUnicast6 is the IPv6 global unicast space (RFC 4291 section 2.4;
// the IANA IPv6 Address Space registry).
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Forms of IPv6 address that carry an IPv4 address: the IPv4 address is
// classified instead (unwrap).
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")          // RFC 4291 section 2.5.5.1
	nat64          = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052 section 2.1
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215
	sixToFour      = netip.MustParsePrefix("2002::/16")      // RFC 3056 section 2
	teredo         = netip.MustParsePrefix("2001::/32")      // RFC 4380 section 4
)

// unwrap returns the IPv4 address an IPv6 address carries, and the form it
// carries it in ("" when it carries none): IPv4-mapped (RFC 4291 section
// 2.5.5.2), IPv4-compatible (::a.b.c.d, deprecated), NAT64 (RFC 6052
// section 2.2, the /96 well-known prefix; the local-use 64:ff9b:1::/48 of
// RFC 8215 with a /96 embedding), 6to4 (2002:AABB:CCDD::/48 for
// a.b.c.d, RFC 3056 section 2) and Teredo (2001:0:SSSS:SSSS:flags:port:
// CCCC:CCCC, the client's address the bitwise inverse of the last 32 bits,
// RFC 4380 section 4).
func unwrap(a netip.Addr) (netip.Addr, string) {
	if a.Is4In6() {
		return a.Unmap(), "IPv4-mapped"
	}
	if !a.Is6() {
		return a, ""
	}
	s := a.As16()
	v4 := func(i int, invert bool) netip.Addr {
		q := [4]byte{s[i], s[i+1], s[i+2], s[i+3]}
		if invert {
			for j := range q {
				q[j] ^= 0xff
			}
		}
		return netip.AddrFrom4(q)
	}
	switch {
	case a == netip.IPv6Unspecified() || a == netip.IPv6Loopback():
		return a, ""
	case ipv4Compatible.Contains(a):
		return v4(12, false), "IPv4-compatible"
	case nat64.Contains(a), nat64Local.Contains(a):
		return v4(12, false), "NAT64"
	case sixToFour.Contains(a):
		return v4(2, false), "6to4"
	case teredo.Contains(a):
		return v4(12, true), "Teredo"
	}
	return a, ""
}

// Classify says why a jwks_uri fetch must not reach address a ("" when it
// may): a is refused when it, or the IPv4 address it carries (unwrap), is
// not global unicast per the IANA special-purpose address registries
// (specialIPv4, specialIPv6), or is one of own (the host's own addresses,
// OwnAddresses).
func Classify(a netip.Addr, own []netip.Addr) string {
	if !a.IsValid() {
		return "not an IP address"
	}
	a = a.WithZone("")
	inner, form := unwrap(a)
	if form == "" {
		return classify(a, own)
	}
	if why := classify(inner, own); why != "" {
		return fmt.Sprintf("%s of %s: %s", form, inner, why)
	}
	// The carried address may be reached. An IPv4-mapped address is that
	// address, and the well-known NAT64 prefix reaches it through the
	// network's translator (DNS64); the other forms are classified as IPv6
	// too: IPv4-compatible, local-use NAT64 and Teredo are refused by the
	// table, 6to4 (global unicast space, in no entry) is not.
	if form == "IPv4-mapped" || nat64.Contains(a) {
		return ""
	}
	return classify6(a, own)
}

func classify(a netip.Addr, own []netip.Addr) string {
	if a.Is6() {
		return classify6(a, own)
	}
	for _, bl := range specialIPv4 {
		if bl.prefix.Contains(a) {
			return bl.name
		}
	}
	return ownAddress(a, own)
}

func classify6(a netip.Addr, own []netip.Addr) string {
	for _, bl := range specialIPv6 {
		if bl.prefix.Contains(a) {
			return bl.name
		}
	}
	if !globalUnicast6.Contains(a) {
		return "not in the IPv6 global unicast space 2000::/3 (RFC 4291 section 2.4)"
	}
	return ownAddress(a, own)
}

func ownAddress(a netip.Addr, own []netip.Addr) string {
	for _, o := range own {
		if o.Unmap().WithZone("") == a {
			return "an address of this host"
		}
	}
	return ""
}

// OwnAddresses are the host's own interface addresses (net.InterfaceAddrs):
// a jwks_uri must not reach the token service's own host by its public
// address either.
func OwnAddresses() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		} else if ip, err := netip.ParseAddr(a.String()); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out, nil
}
