//go:build unix

package tokenholes

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestInvalidClientTiming (long suite; issue 59, hole 12): the token
// service's invalid_client takes as long for a revoked client presenting
// its right secret as for a wrong secret of a well-formed kind and for an
// unknown id: the medians of 400 requests of each, measured by the client
// on the real binary, are within 10% of each other. (The one code path
// behind it is TestInvalidClientOnePath in deploy/e2e/faults: one digest
// comparison, the same Redis commands.)
//
// Each sample comes from an address of its own (127.1.0.0/16), so that no
// failure budget or repeat of a refused secret takes another path, on a
// connection opened (and warmed with /healthz) before the three requests,
// which go in a random order.
func TestInvalidClientTiming(t *testing.T) {
	redistest.Long(t)
	s := prepare(t)
	s.Env = append(s.Env, "LOG_LEVEL=warn")
	s.startAuth(t)
	revoked, revokedSecret := s.secretClient(t, "revoked")
	s.CLI(t, "clients", "revoke", revoked)
	active, _ := s.secretClient(t, "active")

	const samples = 400
	kinds := []string{"revoked client, right secret", "wrong secret", "unknown id"}
	took := make([][]time.Duration, len(kinds))
	rng := rand.New(rand.NewPCG(59, 12))
	for i := range samples {
		hc := from("127.1." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1))
		get(t, hc, s.auth+"/healthz")
		for _, k := range rng.Perm(len(kinds)) {
			var id, secret string
			switch k {
			case 0:
				id, secret = revoked, revokedSecret
			case 1:
				id, secret = active, clients.NewSecret()
			case 2:
				id, secret = clients.NewClientID(), clients.NewSecret()
			}
			start := time.Now()
			a := post(t, hc, s.auth+pathToken, formType, grant, e2etest.Basic(id, secret))
			took[k] = append(took[k], time.Since(start))
			wantAnswer(t, kinds[k], a, http.StatusUnauthorized, bodyInvalidClient)
		}
		hc.CloseIdleConnections()
	}
	medians := make([]time.Duration, len(kinds))
	for k := range kinds {
		slices.Sort(took[k])
		medians[k] = took[k][samples/2]
	}
	lo, hi := slices.Min(medians), slices.Max(medians)
	t.Logf("medians of %d: %s %v, %s %v, %s %v (spread %.1f%%)", samples, kinds[0], medians[0], kinds[1], medians[1], kinds[2], medians[2],
		100*float64(hi-lo)/float64(lo))
	if float64(hi) > 1.10*float64(lo) {
		t.Errorf("medians %v: more than 10%% apart", medians)
	}
}
