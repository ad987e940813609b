package ratelimit

import (
	"time"
)

// Decision is the outcome of one counted request.
type Decision struct {
	Allowed bool
	// Count is the number of admitted requests counted now (see the package
	// documentation), including this one when allowed.
	Count int64
	// Wait is, when refused, how long until a request would be admitted
	// (with nothing admitted in between); when allowed, how long until the
	// oldest counted request leaves the count (the window's reset).
	Wait time.Duration
}

// Remaining is how many more requests the window admits.
func (d Decision) Remaining(limit int64) int64 {
	if r := limit - d.Count; r > 0 {
		return r
	}
	return 0
}

// RetryAfterSeconds rounds Wait up to whole seconds, at least 1, for a
// Retry-After header (RFC 9110 section 10.2.3).
func (d Decision) RetryAfterSeconds() int64 {
	s := int64((d.Wait + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// FromScript reads the three values the Lua function returns.
func FromScript(allowed, count, waitMS int64) Decision {
	return Decision{Allowed: allowed == 1, Count: count, Wait: time.Duration(waitMS) * time.Millisecond}
}

// NowArg is the now_ms argument for a script: the injected clock's time in
// milliseconds, or -1 (the Redis server's clock) when now is nil.
func NowArg(now func() time.Time) int64 {
	if now == nil {
		return -1
	}
	return now().UnixMilli()
}
