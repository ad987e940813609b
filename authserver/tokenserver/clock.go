package tokenserver

import "time"

// rateClock is the clock of the rate limits: the injected one, else the
// local clock (only durations measured by the limiter are added to it).
func (s *Server) rateClock() time.Time {
	if s.cfg.RateNow != nil {
		return s.cfg.RateNow()
	}
	return time.Now()
}
