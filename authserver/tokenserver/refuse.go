package tokenserver

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// failure is a handler's decision on a refused request: whether it counts
// against the address's ceiling of failed requests (addressCeiling). The
// policy, decided where each request is refused:
//
//   - counted: malformed requests (invalid_request), requests without
//     client authentication or with an unusable one, and invalid_client
//     whether or not the id names a client (a known id's wrong, repeated or
//     revoked credential as an unknown one's: were only unknown ids
//     counted, an address that had spent the ceiling would get 401 for the
//     ids that exist and 429 for the others, an existence oracle);
//   - not counted: refusals by a client's own limits (slow_down),
//     invalid_scope, unsupported_grant_type, a token of another client on
//     revocation, and Redis failures. A valid credential is never refused
//     by the ceiling.
type failure bool

const (
	counted    failure = true
	notCounted failure = false
)

// refuse answers err; a counted failure is first counted against the
// address's ceiling, and past it the answer is slow_down.
func (s *Server) refuse(ctx context.Context, w http.ResponseWriter, r *http.Request, creds credentials, err error, f failure) {
	if f == counted {
		if wait, over := s.ceiling.take(limitKey(s.cfg.Trust.Of(r))); over {
			httpserver.Annotate(ctx, slog.Bool("address_ceiling", true))
			err = &slowDown{retryAfter: int64((wait + time.Second - 1) / time.Second), failures: true}
		}
	}
	oe, _ := toOAuth(err)
	s.metrics.Refused(endpointOf(r), oe.Code)
	writeOAuthError(ctx, s.log, w, creds, err)
}

// retryAfterHeader is a Retry-After header of whole seconds.
func retryAfterHeader(seconds int64) http.Header {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(max(seconds, 1), 10))
	return h
}
