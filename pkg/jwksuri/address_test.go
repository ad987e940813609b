package jwksuri

import (
	"net/netip"
	"strings"
	"testing"
)

// TestClassify: every block of the IANA special-purpose registries is
// refused (its first and last address), every form carrying an IPv4
// address is judged by the address it carries, the host's own addresses
// are refused, and public unicast addresses pass.
func TestClassify(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("203.0.114.7"), netip.MustParseAddr("2a01:4f8::7")}
	for _, bl := range append(append([]block{}, specialIPv4...), specialIPv6...) {
		first := bl.prefix.Masked().Addr()
		last := lastOf(bl.prefix)
		for _, a := range []netip.Addr{first, last} {
			if why := Classify(a, nil); why == "" {
				t.Errorf("%s (in %s, %s) passed", a, bl.prefix, bl.name)
			}
		}
	}
	for _, c := range []struct {
		addr string
		want string // a part of the reason; "" passes
	}{
		// Reported as reached by default before (issue 27 point 5).
		{"100.64.0.1", "RFC 6598"},
		{"192.0.0.1", "RFC 6890"},
		{"198.18.0.1", "RFC 2544"},
		{"240.0.0.1", "RFC 1112"},
		{"255.255.255.255", "RFC 919"},
		{"64:ff9b::7f00:1", "NAT64 of 127.0.0.1: loopback"},
		{"::127.0.0.1", "IPv4-compatible of 127.0.0.1: loopback"},
		{"2002:7f00:1::1", "6to4 of 127.0.0.1: loopback"},
		// The other forms.
		{"::ffff:10.1.2.3", "IPv4-mapped of 10.1.2.3: private-use"},
		{"::ffff:127.0.0.1", "IPv4-mapped of 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254: link-local"},
		{"64:ff9b:1::7f00:1", "NAT64 of 127.0.0.1"},
		{"64:ff9b:1::808:808", "local-use IPv4/IPv6 translation (RFC 8215)"},
		{"2002:c0a8:0101::1", "6to4 of 192.168.1.1"},
		// Teredo: server 65.54.227.120, client 127.0.0.1 inverted (80ff:fffe).
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo of 127.0.0.1: loopback"},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", "IETF protocol assignments"}, // client 8.8.8.8: Teredo itself is refused
		{"::8.8.8.8", "IPv4-compatible, deprecated"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fe80::1%eth0", "link-local"},
		{"fd00::1", "unique-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"4000::1", "global unicast space"},
		{"203.0.114.7", "an address of this host"},
		{"::ffff:203.0.114.7", "an address of this host"},
		{"2a01:4f8::7", "an address of this host"},
		// Public unicast: passes, also in a form that reaches it.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"2a00:1450:4001:82a::200e", ""},
		{"2606:4700:4700::1111", ""},
	} {
		got := Classify(netip.MustParseAddr(c.addr), own)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Classify(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func lastOf(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	b := a.AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

func TestOwnAddresses(t *testing.T) {
	own, err := OwnAddresses()
	if err != nil {
		t.Fatal(err)
	}
	loop := netip.MustParseAddr("127.0.0.1")
	found := false
	for _, a := range own {
		found = found || a == loop
	}
	if !found {
		t.Fatalf("own addresses %v lack %s", own, loop)
	}
}
