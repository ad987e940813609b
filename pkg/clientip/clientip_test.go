package clientip_test

import (
	"net/http/httptest"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientip"
)

func TestOf(t *testing.T) {
	trust, err := clientip.ParseTrust("127.0.0.1, 10.0.0.0/8 ,::1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, remote string
		xff          []string
		want         string
		fromProxy    bool
	}{
		{"direct client, forwarded header ignored", "203.0.113.9:5555", []string{"198.51.100.1"}, "203.0.113.9", false},
		{"trusted proxy, one hop", "127.0.0.1:4000", []string{"198.51.100.1"}, "198.51.100.1", true},
		{"trusted proxy chain, rightmost untrusted wins", "10.1.2.3:80", []string{"6.6.6.6, 198.51.100.7, 10.9.9.9"}, "198.51.100.7", true},
		{"several header lines", "127.0.0.1:1", []string{"6.6.6.6", "198.51.100.8"}, "198.51.100.8", true},
		{"proxy without header", "127.0.0.1:1", nil, "127.0.0.1", true},
		{"garbage hop stops the walk at the last trusted", "127.0.0.1:1", []string{"not-an-ip"}, "127.0.0.1", true},
		{"ipv6 loopback proxy", "[::1]:1", []string{"2001:db8::1"}, "2001:db8::1", true},
		{"v4-mapped peer", "[::ffff:203.0.113.5]:1", nil, "203.0.113.5", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := trust.Of(r).String(); got != tt.want {
				t.Errorf("Of = %s, want %s", got, tt.want)
			}
			if got := trust.FromProxy(r); got != tt.fromProxy {
				t.Errorf("FromProxy = %v, want %v", got, tt.fromProxy)
			}
		})
	}
}

func TestParseTrustRejectsGarbage(t *testing.T) {
	for _, s := range []string{"nope", "10.0.0.0/33", "1.2.3.4/x"} {
		if _, err := clientip.ParseTrust(s); err == nil {
			t.Errorf("ParseTrust(%q) = nil error", s)
		}
	}
	empty, err := clientip.ParseTrust("")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := empty.Of(r).String(); got != "127.0.0.1" {
		t.Errorf("no trusted proxy: Of = %s, want the peer", got)
	}
}
