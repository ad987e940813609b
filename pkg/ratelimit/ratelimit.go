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
	// (with nothing admitted in between), never more than the window; when
	// allowed, how long until the oldest counted request leaves the count
	// and frees its place (the window's reset).
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
// Retry-After header (RFC 9110 section 10.2.3): a client that waits that
// long after the refusal, having sent nothing since, is admitted.
func (d Decision) RetryAfterSeconds() int64 { return ceilSeconds(d.Wait) }

// RetryAfter is the Retry-After, in seconds, of a refusal by a window of the
// given length that promises one answer to every refusal: the window
// itself, rounded up to whole seconds (60 for a minute). It is true: a
// refused request's wait is never longer than the window, so a client that
// waits that long after the refusal, having sent nothing since, is always
// admitted. (Should Wait ever exceed the window, RetryAfterSeconds is
// answered instead.)
func (d Decision) RetryAfter(window time.Duration) int64 {
	return max(ceilSeconds(window), d.RetryAfterSeconds())
}

// Reset is the RateLimit-Reset, in seconds, of a window of the given length
// (the IETF httpapi rate-limit headers draft): on a refusal, equal to
// RetryAfter(window), so the two never disagree; on an admission, the
// seconds (rounded up, at least 1) until the oldest counted request leaves
// the window and frees its place.
func (d Decision) Reset(window time.Duration) int64 {
	if d.Allowed {
		return d.RetryAfterSeconds()
	}
	return d.RetryAfter(window)
}

// ceilSeconds rounds d up to whole seconds, at least 1.
func ceilSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// FromScript reads the three values the Lua function returns: allowed is
// WL_ALLOWED or WL_REFUSED (windowContract).
func FromScript(allowed, count, waitMS int64) Decision {
	return Decided(windowCode(allowed) == windowAllowed, count, waitMS)
}

// Decided is the Decision of a script that answered with its own codes
// whether window_limit allowed the request, the count and the wait (ms).
func Decided(allowed bool, count, waitMS int64) Decision {
	return Decision{Allowed: allowed, Count: count, Wait: time.Duration(waitMS) * time.Millisecond}
}

// NowArg is the now_ms argument for a script: the injected clock's time in
// milliseconds, or -1 (the Redis server's clock) when now is nil.
func NowArg(now func() time.Time) int64 {
	if now == nil {
		return -1
	}
	return now().UnixMilli()
}
