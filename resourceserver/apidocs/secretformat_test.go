package apidocs_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// TestPublishedSecretFormat: the regular expression the authentication
// guide publishes is the one the service uses, and with the checksum it
// accepts every generated secret and refuses every single-character change,
// truncation and extension of one.
func TestPublishedSecretFormat(t *testing.T) {
	d, err := apidocs.New("")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := d.Page("authentication")
	m := regexp.MustCompile("(?s)```regex\n(.*?)\n```").FindSubmatch(page)
	if m == nil {
		t.Fatal("the authentication guide publishes no ```regex block")
	}
	published := string(m[1])
	if published != clients.SecretPattern {
		t.Fatalf("published %q, the service uses %q", published, clients.SecretPattern)
	}
	for _, want := range []string{"CRC-32", "base62", "6 digits", "`0-9A-Za-z`", "37 characters"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the algorithm's description lacks %q", want)
		}
	}
	anchored := regexp.MustCompile("^" + published + "$")
	scanner := regexp.MustCompile(published)
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
	for i := range 100 {
		s := clients.NewSecret()
		if !anchored.MatchString(s) || !clients.ValidSecret(s) || scanner.FindString("x="+s+"\n") != s {
			t.Fatalf("generated secret %q not recognised", s)
		}
		if i >= 10 {
			continue
		}
		var mutants []string
		for p := range len(s) {
			for _, c := range []byte(alphabet) {
				if c != s[p] {
					mutants = append(mutants, s[:p]+string(c)+s[p+1:])
				}
			}
			mutants = append(mutants, s[:p])
		}
		for _, c := range []byte(alphabet) {
			mutants = append(mutants, s+string(c))
		}
		for _, mu := range mutants {
			if anchored.MatchString(mu) && clients.ValidSecret(mu) {
				t.Fatalf("mutant %q of %q recognised as a secret", mu, s)
			}
		}
	}
}
