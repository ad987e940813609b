package tokenserver

import (
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// addressCeiling is the per-address limit of failed requests, kept by this
// replica in memory (a token bucket of AddressFailuresPerMinute a minute,
// golang.org/x/time/rate): it only slows a storm of failures (made-up ids
// above all) from one address, so it need not be exact across replicas, and
// keeping it in memory keeps an unknown id's attempt on exactly the Redis
// commands of a known one's.
type addressCeiling struct {
	perMinute int
	now       func() time.Time
	limiters  *lru.Cache[string, *rate.Limiter]
}

func newAddressCeiling(perMinute int, now func() time.Time) (*addressCeiling, error) {
	l, err := lru.New[string, *rate.Limiter](100_000)
	if err != nil {
		return nil, err
	}
	return &addressCeiling{perMinute: perMinute, now: now, limiters: l}, nil
}

// take counts one failure of addr and reports, when the ceiling is reached,
// how long until the address may fail again.
func (c *addressCeiling) take(addr string) (time.Duration, bool) {
	lim, ok := c.limiters.Get(addr)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(float64(c.perMinute)/60), c.perMinute)
		c.limiters.Add(addr, lim)
	}
	now := c.now()
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, true
	}
	return 0, false
}

// limitKey is what the per-address limit counts: an IPv4 address, or the /64
// network of an IPv6 one, since a single IPv6 host usually holds a whole /64
// and could otherwise step to a fresh address for every attempt.
func limitKey(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}
