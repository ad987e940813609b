//go:build unix

package tokenholes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// jwksFetched is the resource server's count of successful fetches of the
// token service's key set (partnerapi_jwks_fetches_total), read from its
// metrics listener, which asks nothing of the keys.
func (s *stack) jwksFetched(t *testing.T) (int, error) {
	t.Helper()
	a, err := do(s.hc, mustRequest(t, http.MethodGet, s.apiMetrics))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `partnerapi_jwks_fetches_total{result="success"} `); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no partnerapi_jwks_fetches_total{result=\"success\"} in the metrics")
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestResourceServerStartedFirst (issue 59, hole 15): a resource server
// started before the token service (its first JWKS fetch refused) reports
// itself not ready, and loads the key set by itself a moment after the
// token service answers, with no request asking for it: within 3 s in the
// long suite (its retries back off from 250 ms to 2 s), well before the
// key cache's own retry after 30 s in the quick one. Then it is ready and
// serves a token. (On the code the issue was filed against it still had no
// keys 8 s later, and /me answered 503.)
func TestResourceServerStartedFirst(t *testing.T) {
	s := prepare(t)
	s.startAPI(t)
	a := get(t, s.hc, s.api+"/readyz")
	if a.status != http.StatusServiceUnavailable || string(a.body) != `{"detail":"signing keys unavailable"}` {
		t.Fatalf("/readyz before the token service runs: %v, want 503 signing keys unavailable", a)
	}
	s.startAuth(t)
	up := time.Now()
	testwait.Until(t, 15*time.Second, "the resource server's first successful JWKS fetch", func() error {
		n, err := s.jwksFetched(t)
		if err == nil && n == 0 {
			err = fmt.Errorf("%d fetches", n)
		}
		return err
	})
	redistest.AtMost(t, "loading the keys after the token service answered", time.Since(up), 3*time.Second)
	e2etest.WaitOK(t, s.api+"/readyz", s.apiProc)
	id, secret := s.secretClient(t, "early")
	tok := accessToken(t, "token", post(t, s.hc, s.auth+pathToken, formType, grant, e2etest.Basic(id, secret)), "Bearer")
	if me := get(t, s.hc, s.api+pathMe, e2etest.Bearer(tok)); me.status != http.StatusOK {
		t.Fatalf("/me: %v", me)
	}
}
