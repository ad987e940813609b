package clients_test

import (
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"regexp"
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

// publishedChecksum is the checksum algorithm as the documentation states
// it, written independently of the package: CRC-32 (IEEE) of the 37 random
// characters as a 6-digit base62 number, most significant digit first, in
// the alphabet 0-9A-Za-z.
func publishedChecksum(random string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	n := uint64(crc32.ChecksumIEEE([]byte(random)))
	out := ""
	for range 6 {
		out = string(alphabet[n%62]) + out
		n /= 62
	}
	return out
}

var publishedRE = regexp.MustCompile(`^` + clients.SecretPattern + `$`)

// publishedValid is what a secret scanner does with the published format:
// the anchored regular expression, then the checksum.
func publishedValid(s string) bool {
	if !publishedRE.MatchString(s) {
		return false
	}
	body := strings.TrimPrefix(s, "svc_cs_")
	return publishedChecksum(body[:37]) == body[37:]
}

func TestSecretChecksumKnownAnswers(t *testing.T) {
	// Computed with Python's zlib.crc32, not with this package.
	for random, want := range map[string]string{
		strings.Repeat("0", 37):                 "3jnQlY",
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJK": "4WQsSZ",
	} {
		if got := publishedChecksum(random); got != want {
			t.Errorf("publishedChecksum(%q) = %q, want %q", random, got, want)
		}
		if !clients.ValidSecret("svc_cs_" + random + want) {
			t.Errorf("ValidSecret(svc_cs_%s%s) = false", random, want)
		}
	}
}

// TestSecretFormat checks that the published pattern and checksum accept
// every generated secret and reject every single-character change,
// truncation and extension of it, as ValidSecret does.
func TestSecretFormat(t *testing.T) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_+/=. "
	scanner := regexp.MustCompile(clients.SecretPattern)
	for i := range 200 {
		s := clients.NewSecret()
		if clients.SecretLen != 50 || len(s) != clients.SecretLen {
			t.Fatalf("len(%q) = %d, want 50", s, len(s))
		}
		if !clients.ValidSecret(s) || !publishedValid(s) {
			t.Fatalf("generated secret %q: ValidSecret %v, published check %v", s, clients.ValidSecret(s), publishedValid(s))
		}
		if got := scanner.FindString("leaked: " + s + ", see log"); got != s {
			t.Fatalf("pattern finds %q in text around %q", got, s)
		}
		if !clients.LegacySecret(s) {
			t.Fatalf("LegacySecret(%q) = false: a checksummed secret has the old shape too", s)
		}
		if i >= 20 { // mutations of the first 20 (about 3,000 each)
			continue
		}
		var mutants []string
		for p := range len(s) {
			for _, c := range []byte(alphabet) {
				if c != s[p] {
					mutants = append(mutants, s[:p]+string(c)+s[p+1:])
				}
			}
		}
		for n := range len(s) {
			mutants = append(mutants, s[:n]) // truncations
		}
		for _, c := range []byte(alphabet) {
			mutants = append(mutants, s+string(c), string(c)+s) // extensions
		}
		mutants = append(mutants, strings.ToUpper(s), strings.ToLower(s), " "+s, s+"\n")
		for _, m := range mutants {
			if m == s {
				continue
			}
			if clients.ValidSecret(m) || publishedValid(m) {
				t.Fatalf("mutant %q of %q accepted: ValidSecret %v, published check %v", m, s, clients.ValidSecret(m), publishedValid(m))
			}
		}
	}
}

func TestLegacySecret(t *testing.T) {
	legacy := "svc_cs_" + strings.Repeat("Ab-_9", 8) + "xyz" // 43 base64url characters
	if !clients.LegacySecret(legacy) || clients.ValidSecret(legacy) {
		t.Errorf("legacy secret: LegacySecret %v (want true), ValidSecret %v (want false)", clients.LegacySecret(legacy), clients.ValidSecret(legacy))
	}
	for _, s := range []string{"", "svc_cs_", legacy[:len(legacy)-1], legacy + "a", "svc_cs_" + strings.Repeat("a", 42) + "+", "svc_x_" + strings.Repeat("a", 43)} {
		if clients.LegacySecret(s) {
			t.Errorf("LegacySecret(%q) = true", s)
		}
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
	for _, other := range []string{"", secret[:len(secret)-1], secret + "x", strings.ToUpper(secret), clients.NewSecret()} {
		if clients.DigestOf(other) == d {
			t.Errorf("%q has the digest of the secret", other)
		}
	}
}

// TestScopeRules: the scope rules of ClientSpec.Validate
// (resourceserver/apidocs/guides/scopes-and-audiences.md, rule 1 under
// Rules), every problem reported at once.
func TestScopeRules(t *testing.T) {
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
		err := clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: tc.audience, Scopes: tc.scopes}.Validate()
		if tc.want == nil {
			if err != nil {
				t.Errorf("Validate(%s, %v) = %v, want nil", tc.audience, tc.scopes, err)
			}
			continue
		}
		if !errors.Is(err, clients.ErrInvalid) {
			t.Errorf("Validate(%s, %v) = %v, want ErrInvalid", tc.audience, tc.scopes, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(%s, %v) = %q, does not mention %q", tc.audience, tc.scopes, err, w)
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
