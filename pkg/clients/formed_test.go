package clients

import (
	"regexp"
	"testing"
)

// TestFormedMatchesPatterns: the byte checks of ValidClientID and
// ValidSecret accept exactly what the published patterns match, on valid
// credentials, every one-byte change of them (each position, every byte
// value), and every shorter and longer form.
func TestFormedMatchesPatterns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		re     *regexp.Regexp
		formed func(string) bool
		valid  string
	}{
		{"client id", regexp.MustCompile(`^svc_[a-z2-7]{24}$`), func(s string) bool { return formed(s, ClientIDPrefix, clientIDLen, &idChars) }, NewClientID()},
		{"secret", regexp.MustCompile(`^` + SecretPattern + `$`), func(s string) bool {
			return formed(s, SecretPrefix, SecretRandomLen+SecretChecksumLen, &base62Chars)
		}, NewSecret()},
	} {
		var candidates []string
		for i := range len(tc.valid) {
			for b := range 256 {
				m := []byte(tc.valid)
				m[i] = byte(b)
				candidates = append(candidates, string(m))
			}
			candidates = append(candidates, tc.valid[:i], tc.valid[:i]+tc.valid[i+1:])
		}
		candidates = append(candidates, tc.valid, tc.valid+"a", tc.valid+"\n", "", "\xff"+tc.valid[1:])
		accepted := 0
		for _, c := range candidates {
			want := tc.re.MatchString(c)
			if got := tc.formed(c); got != want {
				t.Errorf("%s %q: formed %t, pattern %t", tc.name, c, got, want)
			}
			if want {
				accepted++
			}
		}
		// The valid one and, at each position after the prefix, the other
		// characters of the alphabet: the comparison covered both answers.
		if accepted < len(tc.valid) || accepted == len(candidates) {
			t.Errorf("%s: %d of %d candidates accepted", tc.name, accepted, len(candidates))
		}
	}
	if !ValidClientID(NewClientID()) || !ValidSecret(NewSecret()) {
		t.Error("a new id or secret is not valid")
	}
}
