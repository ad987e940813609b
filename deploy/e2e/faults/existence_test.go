package faults

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestExistenceByTiming (long; issue 27 point 8): a known client id with a
// wrong, well-formed secret and an unknown id must cost the token endpoint
// the same, or the time of an invalid_client tells which ids exist. It
// sends 1,000 of each, interleaved in random order, through the whole
// handler on the real Redis, each from an address of its own (so neither
// the per-client failure budget nor the address ceiling answers instead),
// and compares the two samples by their medians and by the Mann-Whitney U
// test's z: it fails when the distributions differ by more than chance
// would (|z| > 4) and by more than 10 us between the medians.
func TestExistenceByTiming(t *testing.T) {
	redistest.Long(t)
	s := newStack(t)
	id, _ := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	const n = 1000
	var addr int
	once := func(clientID string) time.Duration {
		addr++
		req := httptest.NewRequest(http.MethodPost, pathToken, strings.NewReader(grant))
		req.Header.Set("Content-Type", formType)
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.18.%d.%d", addr/250, addr%250+1))
		basic(clientID, clients.NewSecret())(req)
		req.RemoteAddr = proxyAddr + ":50000"
		rec := httptest.NewRecorder()
		start := time.Now()
		s.handler.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d %s, want 401", rec.Code, rec.Body)
		}
		return d
	}
	// Warm up both paths (script load, connections, caches).
	for range 50 {
		once(id)
		once(clients.NewClientID())
	}
	r := rand.New(rand.NewPCG(27, 8))
	var known, unknown []float64
	for range n {
		if r.IntN(2) == 0 {
			known = append(known, float64(once(id).Microseconds()))
			unknown = append(unknown, float64(once(clients.NewClientID()).Microseconds()))
		} else {
			unknown = append(unknown, float64(once(clients.NewClientID()).Microseconds()))
			known = append(known, float64(once(id).Microseconds()))
		}
	}
	mk, mu := median(known), median(unknown)
	z := mannWhitneyZ(known, unknown)
	t.Logf("known id, wrong secret: median %.0f us; unknown id: median %.0f us; difference %.0f us; Mann-Whitney z = %.2f (%d each)",
		mk, mu, mk-mu, z, n)
	if math.Abs(z) > 4 && math.Abs(mk-mu) > 10 {
		t.Errorf("an invalid_client takes %.0f us for a known id and %.0f us for an unknown one (z = %.2f): the time tells which ids exist", mk, mu, z)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mannWhitneyZ is the normal approximation of the Mann-Whitney U statistic
// of a against b (ties get their average rank): positive when a tends to be
// larger.
func mannWhitneyZ(a, b []float64) float64 {
	type obs struct {
		v     float64
		fromA bool
	}
	all := make([]obs, 0, len(a)+len(b))
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	ra := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j, averaged
		for k := i; k < j; k++ {
			if all[k].fromA {
				ra += rank
			}
		}
		i = j
	}
	n1, n2 := float64(len(a)), float64(len(b))
	u := ra - n1*(n1+1)/2
	return (u - n1*n2/2) / math.Sqrt(n1*n2*(n1+n2+1)/12)
}

// TestMannWhitneyZ pins the statistic on samples whose answer is known.
func TestMannWhitneyZ(t *testing.T) {
	if z := mannWhitneyZ([]float64{1, 2, 3}, []float64{1, 2, 3}); z != 0 {
		t.Errorf("equal samples: z = %v, want 0", z)
	}
	// Every a above every b: U = n1*n2 = 9, z = 4.5/sqrt(5.25).
	if z, want := mannWhitneyZ([]float64{4, 5, 6}, []float64{1, 2, 3}), 4.5/math.Sqrt(5.25); math.Abs(z-want) > 1e-12 {
		t.Errorf("separated samples: z = %v, want %v", z, want)
	}
	if z := mannWhitneyZ([]float64{1, 2, 3}, []float64{4, 5, 6}); z >= 0 {
		t.Errorf("a below b: z = %v, want negative", z)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
}
