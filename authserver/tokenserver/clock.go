package tokenserver

import (
	"net/netip"
	"time"
)

// rateClock is the clock of the rate limits: the injected one, else the
// local clock (only durations measured by the limiter are added to it).
func (s *Server) rateClock() time.Time {
	if s.cfg.RateNow != nil {
		return s.cfg.RateNow()
	}
	return time.Now()
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
