package dpop_test

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

func TestNormalizeURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://server.example.com/token", "https://server.example.com/token"},
		{"HTTPS://Server.Example.COM/token", "https://server.example.com/token"},
		{"https://server.example.com:443/token", "https://server.example.com/token"},
		{"http://server.example.com:80/token", "http://server.example.com/token"},
		{"https://server.example.com:80/token", "https://server.example.com:80/token"},
		{"http://server.example.com:8080/token", "http://server.example.com:8080/token"},
		{"https://server.example.com:/token", "https://server.example.com/token"},
		{"https://server.example.com", "https://server.example.com/"},
		{"https://server.example.com?x=1", "https://server.example.com/"},
		{"https://server.example.com/token?grant_type=client_credentials#frag", "https://server.example.com/token"},
		{"https://server.example.com/%7efoo/%2fbar/%e2%82%ac", "https://server.example.com/~foo/%2Fbar/%E2%82%AC"},
		{"https://server.example.com/a/./b/../c", "https://server.example.com/a/c"},
		{"https://server.example.com/a/b/..", "https://server.example.com/a/"},
		{"https://server.example.com/..", "https://server.example.com/"},
		{"https://server.example.com/%2E%2E/x", "https://server.example.com/x"},
		{"https://[2001:DB8::1]:443/x", "https://[2001:db8::1]/x"},
		{"https://[2001:db8::1]/x", "https://[2001:db8::1]/x"},
		{"https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/x"},
	} {
		got, ok := dpop.NormalizeURI(tc.in)
		if !ok || got != tc.want {
			t.Errorf("NormalizeURI(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "/token", "server.example.com/token", "ftp://server.example.com/x", "https:///x",
		"https://user:pw@server.example.com/x", "mailto:a@b", "https://server.example.com/%zz", "https://server.example.com/%4", "http://[::1"} {
		if got, ok := dpop.NormalizeURI(bad); ok {
			t.Errorf("NormalizeURI(%q) = %q, accepted", bad, got)
		}
	}
}
