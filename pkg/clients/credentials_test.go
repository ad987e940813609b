package clients_test

import (
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

func TestNewClientIDAndSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		id, secret := clients.NewClientID(), clients.NewSecret()
		if !idRE.MatchString(id) {
			t.Fatalf("NewClientID() = %q, want %s", id, idRE)
		}
		if !secretRE.MatchString(secret) {
			t.Fatalf("NewSecret() = %q, want %s", secret, secretRE)
		}
		if !clients.ValidClientID(id) {
			t.Fatalf("ValidClientID(%q) = false for a fresh id", id)
		}
		if seen[id] || seen[secret] {
			t.Fatalf("repeated value: %s %s", id, secret)
		}
		seen[id], seen[secret] = true, true
	}
}

func TestValidClientID(t *testing.T) {
	ok := "svc_" + strings.Repeat("a", 20) + "2345"
	tests := []struct {
		id   string
		want bool
	}{
		{ok, true},
		{"svc_" + strings.Repeat("z7", 12), true},
		{"", false},
		{"svc_", false},
		{ok[:len(ok)-1], false},      // 23 characters
		{ok + "a", false},            // 25 characters
		{strings.ToUpper(ok), false}, // upper case
		{"svc_" + strings.Repeat("a", 23) + "1", false}, // 1 is not base32
		{"svc_" + strings.Repeat("a", 23) + "8", false},
		{"cli_" + strings.Repeat("a", 24), false},
		{" " + ok, false},
		{ok + "\n", false},
		{"svc_" + strings.Repeat("a", 22) + "}{", false},
		{clients.SecretPrefix + strings.Repeat("a", 20), false},
	}
	for _, tc := range tests {
		if got := clients.ValidClientID(tc.id); got != tc.want {
			t.Errorf("ValidClientID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	secret := clients.NewSecret()
	d := clients.DigestOf(secret)
	if d != clients.Digest(sha256.Sum256([]byte(secret))) {
		t.Fatal("DigestOf is not the SHA-256 of the secret")
	}
	if !d.Matches(secret) {
		t.Fatal("digest does not match its secret")
	}
	for _, wrong := range []string{"", secret[:len(secret)-1], secret + "x", strings.ToUpper(secret), clients.NewSecret()} {
		if d.Matches(wrong) {
			t.Errorf("digest matches %q", wrong)
		}
	}
	var zero clients.Digest
	if zero.Matches("") {
		t.Error("the zero digest matches the empty secret")
	}
}

func TestCheckScopes(t *testing.T) {
	tests := []struct {
		audience string
		scopes   []string
		want     []string // substrings of the error; nil: valid
	}{
		{clients.AudienceHospital, clients.AllScopes, nil},
		{clients.AudienceHospital, nil, nil},
		{clients.AudiencePharma, []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe}, nil},
		{clients.AudiencePSPPartner, []string{clients.ScopeEventsSubscribe}, nil},
		{clients.AudiencePharma, []string{clients.ScopePatientsRead}, []string{"patients.read", "hospital"}},
		{clients.AudiencePharma, []string{clients.ScopeReferralsWrite}, []string{"referrals.write", "hospital"}},
		{clients.AudiencePSPPartner, []string{clients.ScopePatientsRead}, []string{"patients.read", "hospital"}},
		{clients.AudiencePSPPartner, []string{clients.ScopeReferralsWrite}, []string{"referrals.write", "hospital"}},
		{clients.AudienceHospital, []string{"patients.write"}, []string{`"patients.write": unknown`}},
		{clients.AudienceHospital, []string{""}, []string{`"": unknown`}},
		{clients.AudienceHospital, []string{clients.ScopePatientsRead, clients.ScopePatientsRead}, []string{"given twice"}},
		{clients.AudiencePharma, []string{clients.ScopePatientsRead, clients.ScopeReferralsWrite, "x"},
			[]string{`"patients.read"`, `"referrals.write"`, `"x": unknown`}},
	}
	for _, tc := range tests {
		err := clients.CheckScopes(tc.audience, tc.scopes)
		if tc.want == nil {
			if err != nil {
				t.Errorf("CheckScopes(%s, %v) = %v, want nil", tc.audience, tc.scopes, err)
			}
			continue
		}
		if !errors.Is(err, clients.ErrInvalid) {
			t.Errorf("CheckScopes(%s, %v) = %v, want ErrInvalid", tc.audience, tc.scopes, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckScopes(%s, %v) = %q, does not mention %q", tc.audience, tc.scopes, err, w)
			}
		}
	}
}

func TestParseScopes(t *testing.T) {
	for in, want := range map[string][]string{
		"":                     {},
		"   ":                  {},
		"a":                    {"a"},
		" a  b\tc ":            {"a", "b", "c"},
		"events.subscribe x.y": {"events.subscribe", "x.y"},
	} {
		got := clients.ParseScopes(in)
		if got == nil || !slices.Equal(got, want) {
			t.Errorf("ParseScopes(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func BenchmarkDigestMatches(b *testing.B) {
	secret := clients.NewSecret()
	d := clients.DigestOf(secret)
	b.ReportAllocs()
	for b.Loop() {
		if !d.Matches(secret) {
			b.Fatal("no match")
		}
	}
}
