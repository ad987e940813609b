package clients

import (
	"context"
	"errors"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Admission outcomes of AdmitAPI (admit.lua names them DEAD, ADMITTED and
// LIMITED).
type Outcome int

// Outcomes.
const (
	// Dead: unknown client, revoked, the generation moved on, the token's
	// secret retired or the token revoked.
	Dead Outcome = iota
	// Admitted: in good standing and under the limit.
	Admitted
	// Limited: in good standing but over the limit.
	Limited
	// Replayed: in good standing, but the request's DPoP proof was used
	// before (RFC 9449 section 11.1): its replay mark already existed. The
	// request is not counted against the limit.
	Replayed
)

// TokenRef names an access token and what its standing depends on: the
// client, the credential generation it was issued at, the secret it came
// from ("sid"; 1 for tokens issued before secrets had ids) and its "jti",
// which revocation (RFC 7009) marks.
type TokenRef struct {
	ClientID   string
	Generation int64
	SecretID   int64
	ID         string
	// ExpiresAt is the token's "exp" (Unix seconds): a revocation mark is
	// looked up only for tokens expiring no later than the client's latest
	// revoked one.
	ExpiresAt int64
	// DPoPReplay, when not empty, is the dpop.ReplayKey of the request's
	// DPoP proof: the script marks it used under the client's hash tag for
	// DPoPReplayTTL (SET NX PX), and a mark that already existed is
	// Replayed. Empty (every bearer request): no mark, nothing more done.
	DPoPReplay    string
	DPoPReplayTTL time.Duration
}

// TokenRefOf names a verified access token by its claims.
func TokenRefOf(c *accesstoken.Claims) TokenRef {
	return TokenRef{ClientID: c.ClientID, Generation: c.Generation, SecretID: c.CredentialID(), ID: c.ID, ExpiresAt: c.ExpiresAt}
}

// admitAPIScript (scripts.go, lua/admit.lua) checks a token's standing
// and counts the API request, returning what GET /api/v1/me/ shows.

// admitReply is admit.lua's reply: {DEAD}, or every field.
type admitReply struct {
	Code        int64 // Outcome: Dead, Admitted, Limited
	Count       int64
	WaitMS      int64
	Limit       int64
	Name        string
	Audience    string
	OrgName     string
	OrgSlug     string
	Environment string
}

// Description is what GET /api/v1/me/ shows of a client beyond its token.
type Description struct {
	Name               string
	Audience           string
	OrgName            string
	OrgSlug            string
	Environment        string
	RateLimitPerMinute int64
}

// APIAdmission is the result of AdmitAPI.
type APIAdmission struct {
	Outcome     Outcome
	Decision    ratelimit.Decision
	Description Description
}

// AdmitAPI decides one API request made with token t, in one round trip:
// the client must be active at the token's generation, still hold the
// secret the token came from, and the token must not be revoked (so a
// rotation, a retired secret or a revocation shows on the next request),
// and the client under its per-minute limit, counted across every replica.
func (s *Store) AdmitAPI(ctx context.Context, t TokenRef, now func() time.Time) (APIAdmission, error) {
	if !ValidClientID(t.ClientID) {
		return APIAdmission{Outcome: Dead}, nil
	}
	keys := []string{s.clientKey(t.ClientID), s.apiLogKey(t.ClientID), s.revokedTokenKey(t.ClientID, t.ID)}
	args := []any{t.Generation, ratelimit.NowArg(now), Window.Milliseconds(), t.SecretID, t.ExpiresAt}
	if t.DPoPReplay != "" {
		ttl := t.DPoPReplayTTL.Milliseconds()
		if ttl <= 0 {
			return APIAdmission{}, unavailable("admit API request", errors.New("a DPoP replay mark needs a lifetime"))
		}
		keys = append(keys, s.dpopKey(t.ClientID, t.DPoPReplay))
		args = append(args, ttl)
	}
	r, err := s.runHot(ctx, admitAPIScript, keys, args...).Result()
	if err != nil {
		return APIAdmission{}, unavailable("admit API request", err)
	}
	var rep admitReply
	if err := decodeReply(r, &rep); err != nil {
		return APIAdmission{}, unavailable("admit API request", err)
	}
	switch Outcome(rep.Code) {
	case Dead, Replayed:
		return APIAdmission{Outcome: Outcome(rep.Code)}, nil
	}
	return APIAdmission{
		Outcome:  Outcome(rep.Code),
		Decision: ratelimit.FromScript(2-rep.Code, rep.Count, rep.WaitMS),
		Description: Description{
			RateLimitPerMinute: rep.Limit, Name: rep.Name, Audience: rep.Audience,
			OrgName: rep.OrgName, OrgSlug: rep.OrgSlug, Environment: rep.Environment,
		},
	}, nil
}
