package dpop_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

func TestNonceSource(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, dpop.MinNonceSecret)
	period := time.Minute
	s, err := dpop.NewNonceSource(secret, period)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000-1_800_000_000%60, 0) // the start of a period
	n := s.Nonce(start.Add(10 * time.Second))
	if len(n) != 32 || strings.Trim(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("nonce %q: want 32 base64url characters", n)
	}
	if n2 := s.Nonce(start.Add(59 * time.Second)); n2 != n {
		t.Fatalf("the nonce changed within its period: %q, %q", n, n2)
	}
	if n3 := s.Nonce(start.Add(60 * time.Second)); n3 == n {
		t.Fatal("the nonce did not change with the period")
	}
	// Another replica with the same secret issues and accepts the same.
	replica, _ := dpop.NewNonceSource(append([]byte(nil), secret...), period)
	if replica.Nonce(start) != n {
		t.Fatal("two sources with one secret disagree")
	}
	for _, tc := range []struct {
		name string
		at   time.Duration // after start
		want bool
	}{
		{"in its period", 30 * time.Second, true},
		{"in the next period", 90 * time.Second, true},
		{"two periods later", 120 * time.Second, false},
		{"in the previous period, within the leeway of its end", -dpop.DefaultLeeway, true},
		{"in the previous period, beyond the leeway", -dpop.DefaultLeeway - time.Second, false},
	} {
		if got := replica.Valid(n, start.Add(tc.at)); got != tc.want {
			t.Errorf("%s: Valid = %v, want %v", tc.name, got, tc.want)
		}
	}
	other, _ := dpop.NewNonceSource(bytes.Repeat([]byte{8}, dpop.MinNonceSecret), period)
	if other.Valid(n, start) {
		t.Fatal("a source with another secret accepted the nonce")
	}
	tampered := []byte(n)
	tampered[len(tampered)-2] ^= 'A' ^ 'B'
	for _, bad := range []string{"", n[:31], n + "A", string(tampered), strings.Repeat("A", 32), n[:30] + "=="} {
		if s.Valid(bad, start) {
			t.Errorf("Valid(%q) accepted", bad)
		}
	}
}

func TestNewNonceSourceRefuses(t *testing.T) {
	if _, err := dpop.NewNonceSource(make([]byte, dpop.MinNonceSecret-1), 0); err == nil || err.Error() != "dpop: the nonce secret must be at least 32 bytes" {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := dpop.NewNonceSource(make([]byte, dpop.MinNonceSecret), time.Millisecond); err == nil || err.Error() != "dpop: the nonce period must be at least a second" {
		t.Fatalf("short period: %v", err)
	}
	secret := bytes.Repeat([]byte{1}, dpop.MinNonceSecret)
	s, err := dpop.NewNonceSource(secret, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Nonce(now)
	secret[0] = 2 // the source copied its secret
	if !s.Valid(n, now.Add(dpop.DefaultNoncePeriod)) || s.Valid(n, now.Add(2*dpop.DefaultNoncePeriod+time.Second)) {
		t.Fatal("the default period is not DefaultNoncePeriod, or the secret was not copied")
	}
}

// TestVerifyWithNonceSource runs the nonce round of sections 8 and 9: a
// proof without a nonce is refused with use_dpop_nonce, the answer's nonce
// makes the next proof pass.
func TestVerifyWithNonceSource(t *testing.T) {
	s, _ := dpop.NewNonceSource(bytes.Repeat([]byte{3}, dpop.MinNonceSecret), 0)
	k := keyFor(t, "EdDSA")
	in := dpop.Input{Headers: []string{jwxProof(t, k, goodClaims())}, Method: testMethod, URI: testURI, Now: now, Nonces: s}
	if _, err := dpop.Verify(in); err == nil || err.Error() != "dpop: use_dpop_nonce: a DPoP nonce is required" {
		t.Fatalf("without a nonce: %v", err)
	}
	c := goodClaims()
	c["nonce"] = s.Nonce(now)
	in.Headers = []string{jwxProof(t, k, c)}
	if _, err := dpop.Verify(in); err != nil {
		t.Fatalf("with the nonce: %v", err)
	}
}
