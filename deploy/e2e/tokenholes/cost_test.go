//go:build unix

package tokenholes

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// ceiling is the token service's default ceiling of failed requests per
// address and minute (tokenserver.DefaultAddressFailuresPerMinute).
const ceiling = 600

// cpuTicks is the CPU time the process pid has used, user and system
// (utime+stime of /proc/PID/stat, in clock ticks).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses: state
	// (field 3) first, utime and stime fields 14 and 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return utime + stime
}

// flood sends n token requests from ip, four at a time, each with the
// Basic credentials of a made-up client and the DPoP header proof (""
// none), and returns how many got each status.
func flood(t *testing.T, s *stack, ip string, n int, proof string) map[int]int {
	t.Helper()
	hc := from(ip)
	id, secret := clients.NewClientID(), clients.NewSecret()
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		failed error
		wg     sync.WaitGroup
		next   = make(chan struct{}, n)
	)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 4 {
		wg.Go(func() {
			for range next {
				mods := []func(*http.Request){e2etest.Basic(id, secret)}
				if proof != "" {
					mods = append(mods, e2etest.Header("DPoP", proof))
				}
				a, err := tryPost(hc, s.auth+pathToken, formType, grant, mods...)
				mu.Lock()
				if err != nil {
					failed = err
				} else {
					counts[a.status]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatalf("flood from %s: %v", ip, failed)
	}
	return counts
}

// measured is the token service's CPU for one flood (ticks) and its
// answers.
type measured struct {
	ticks  int64
	counts map[int]int
}

func (s *stack) measure(t *testing.T, ip string, n int, proof string) measured {
	t.Helper()
	pid := s.authProc.Cmd.Process.Pid
	before := cpuTicks(t, pid)
	counts := flood(t, s, ip, n, proof)
	return measured{cpuTicks(t, pid) - before, counts}
}

// bigRSAProof is a DPoP proof for the token endpoint whose jwk is an RSA
// public key of bits bits (a random odd modulus: what matters is its size)
// and whose signature is as long as the modulus: an RSA verification of
// that size, which a proof of at most 8 KiB allows up to about 16,000
// bits, unless the key is refused for its size first.
func bigRSAProof(t *testing.T, tokenURL string, bits int) string {
	t.Helper()
	n := make([]byte, bits/8)
	_, _ = rand.Read(n)
	n[0] |= 0x80
	n[len(n)-1] |= 1
	sig := make([]byte, bits/8)
	_, _ = rand.Read(sig)
	sig[0] = 0 // below the modulus
	b64 := base64.RawURLEncoding.EncodeToString
	hdr, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "RS256",
		"jwk": map[string]string{"kty": "RSA", "n": b64(n), "e": "AQAB"}})
	claims, _ := json.Marshal(map[string]any{"jti": "big-rsa-" + strconv.Itoa(bits), "htm": "POST", "htu": tokenURL, "iat": time.Now().Unix()})
	p := b64(hdr) + "." + b64(claims) + "." + b64(sig)
	if len(p) > 8<<10 {
		t.Fatalf("a proof of %d bytes: over the 8 KiB cap", len(p))
	}
	return p
}

// es384Proof is a valid DPoP proof for the token endpoint, signed with a
// fresh P-384 key (ES384: the dearest signature check the token service
// accepts from anyone).
func es384Proof(t *testing.T, tokenURL string) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.Import(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES384", "jwk": pub})
	claims, _ := json.Marshal(map[string]any{"jti": "es384-cost", "htm": "POST", "htu": tokenURL, "iat": time.Now().Unix()})
	b64 := base64.RawURLEncoding.EncodeToString
	input := b64(hdr) + "." + b64(claims)
	sig, err := jwsbb.Sign(crypto.Signer(priv), "ES384", []byte(input), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

// TestSignatureCost (issue 59, hole 6): what an unauthenticated token
// request can make the token service spend on signatures is bounded.
//
//   - 1,000 requests of a made-up client whose DPoP proof carries an RSA
//     key of 16,384 bits (8 KiB allows it) cost the process at most twice
//     the CPU of 1,000 such requests without a proof, both from an address
//     of their own (600 answered 401, the rest 429 by the address's
//     ceiling): the key is refused for its size before any signature
//     check (package keysize). On the code the issue was filed against
//     each cost a 16,384-bit RSA verification, 5.5-6.5 ms, 429 or not.
//   - From an address whose ceiling is spent, 1,000 such requests with a
//     valid ES384 proof, all 429, cost at most twice as many without a
//     proof: the proof is not verified before the credential held.
//
// Each comparison runs twice, alternating; the figures are logged.
func TestSignatureCost(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	s := prepare(t)
	s.startAuth(t)
	tokenURL := s.auth + pathToken
	const n = 1000
	want := map[int]int{http.StatusUnauthorized: ceiling, http.StatusTooManyRequests: n - ceiling}
	check := func(what string, m measured, want map[int]int) {
		t.Helper()
		if len(m.counts) != len(want) || m.counts[401] != want[401] || m.counts[429] != want[429] {
			t.Fatalf("%s: answers %v (status: count), want %v", what, m.counts, want)
		}
	}
	big := bigRSAProof(t, tokenURL, 16384)
	var plain, bigRSA, plainSpent, es384Spent int64
	for round := range 2 {
		// Fresh addresses each round: 127.0.R.A.
		ip := func(a int) string { return "127.0." + strconv.Itoa(59+round) + "." + strconv.Itoa(a) }
		m := s.measure(t, ip(1), n, "")
		check("plain", m, want)
		plain += m.ticks
		m = s.measure(t, ip(2), n, big)
		check("RSA-16384 proofs", m, want)
		bigRSA += m.ticks

		spent := map[int]int{http.StatusTooManyRequests: n}
		check("spending", measured{counts: flood(t, s, ip(3), ceiling, "")}, map[int]int{http.StatusUnauthorized: ceiling})
		m = s.measure(t, ip(3), n, "")
		check("plain, ceiling spent", m, spent)
		plainSpent += m.ticks
		proof := es384Proof(t, tokenURL)
		check("spending", measured{counts: flood(t, s, ip(4), ceiling, "")}, map[int]int{http.StatusUnauthorized: ceiling})
		m = s.measure(t, ip(4), n, proof)
		check("ES384 proofs, ceiling spent", m, spent)
		es384Spent += m.ticks
	}
	ratio := func(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }
	t.Logf("token service CPU (ticks) for 2 x %d requests: plain %d, RSA-16384 proofs %d (%.2fx); from a spent address: plain %d, ES384 proofs %d (%.2fx)",
		n, plain, bigRSA, ratio(bigRSA, plain), plainSpent, es384Spent, ratio(es384Spent, plainSpent))
	if bigRSA > 2*plain {
		t.Errorf("requests with RSA-16384 proofs cost %.2fx plain refused ones, want at most 2x", ratio(bigRSA, plain))
	}
	if es384Spent > 2*plainSpent {
		t.Errorf("requests with ES384 proofs from a spent address cost %.2fx plain ones, want at most 2x", ratio(es384Spent, plainSpent))
	}
}
