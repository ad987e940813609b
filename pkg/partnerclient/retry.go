package partnerclient

import (
	"context"
	"net/http"
	"time"
)

// retryable reports whether an answer's status is retried: 429 and 5xx
// except 501 Not Implemented (RFC 9110 section 15.6.2), which no retry fixes.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusNotImplemented)
}

// backoff is the wait before retry number attempt (0-based) without
// Retry-After: exponential from BaseDelay, capped at MaxDelay, with "equal
// jitter" (half fixed, half random), so a crowd of clients spreads out yet
// none retries at once.
func (c *Config) backoff(attempt int) time.Duration {
	d := c.BaseDelay
	for i := 0; i < attempt && d < c.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.MaxDelay)
	return d/2 + c.Jitter(d-d/2)
}

// waitFor decides the wait before retrying an answer with status and
// Retry-After ra: ra if given, else the backoff of attempt. It reports false
// when the wait is longer than MaxWait or than ctx allows: the caller then
// returns the answer instead of waiting.
func (c *Config) waitFor(ctx context.Context, status int, ra time.Duration, attempt int) (time.Duration, bool) {
	wait := ra
	if wait == 0 {
		if status == http.StatusTooManyRequests {
			wait = c.BaseDelay // a 429 without Retry-After: a short pause
		} else {
			wait = c.backoff(attempt)
		}
	}
	if wait > c.MaxWait {
		return wait, false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return wait, false
	}
	return wait, true
}
