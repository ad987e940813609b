package clients

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheckKeysRSASize (issue 59, hole 6): a client's RSA key is accepted
// from 2048 to 4096 bits (package keysize), registered or served by a
// jwks_uri (both go through CheckKeys), and refused above, with the rule
// in the refusal (below 2048 bits jwx does not parse the set at all).
func TestCheckKeysRSASize(t *testing.T) {
	for _, c := range []struct {
		bits int
		ok   bool
	}{{2048, true}, {3072, true}, {4096, true}, {4104, false}, {16384, false}} {
		n := make([]byte, c.bits/8)
		_, _ = rand.Read(n)
		n[0] |= 0x80
		n[len(n)-1] |= 1
		set := fmt.Sprintf(`{"keys":[{"kty":"RSA","kid":"k","n":%q,"e":"AQAB"}]}`, base64.RawURLEncoding.EncodeToString(n))
		_, err := CheckKeySet([]byte(set))
		if c.ok {
			if err != nil {
				t.Errorf("RSA-%d: %v", c.bits, err)
			}
			continue
		}
		var refusal *Error
		if !errors.As(err, &refusal) || !strings.Contains(refusal.Detail, `key "k": unsupported key (EC P-256 or P-384, RSA of 2048 to 4096 bits, or Ed25519)`) {
			t.Errorf("RSA-%d: %v, want refused for its size", c.bits, err)
		}
	}
}
