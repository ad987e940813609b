package clients

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Admission outcomes of AdmitAPI (admit.lua's codes DEAD, ADMITTED,
// LIMITED and REPLAYED).
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
// and counts the API request, returning what GET /api/v1/me/ shows; its
// keys, arguments, reply and codes are its contract (contracts.go:
// admitKeys, admitArgs, admitReply, admitCode).

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
	keys := admitKeys{Client: s.clientKey(t.ClientID), APILog: s.apiLogKey(t.ClientID), RevokedMark: s.revokedTokenKey(t.ClientID, t.ID)}
	args := admitArgs{Generation: t.Generation, NowMS: ratelimit.NowArg(now), WindowMS: Window.Milliseconds(), SecretID: t.SecretID, Exp: t.ExpiresAt}
	if t.DPoPReplay != "" {
		ttl := t.DPoPReplayTTL.Milliseconds()
		if ttl <= 0 {
			return APIAdmission{}, unavailable("admit API request", errors.New("a DPoP replay mark needs a lifetime"))
		}
		keys.ReplayMark, args.ReplayTTLMS = s.dpopKey(t.ClientID, t.DPoPReplay), ttl
	}
	res, err := s.runHot(ctx, admitAPIScript, keys.list(), args.list()...).Result()
	var r admitReply
	if err == nil {
		err = r.decode(res)
	}
	if err != nil {
		return APIAdmission{}, unavailable("admit API request", err)
	}
	var out APIAdmission
	switch r.Code {
	case admitDead:
		return APIAdmission{Outcome: Dead}, nil
	case admitReplayed:
		return APIAdmission{Outcome: Replayed}, nil
	case admitAdmitted:
		out.Outcome = Admitted
	case admitLimited:
		out.Outcome = Limited
	default:
		return APIAdmission{}, unavailable("admit API request", fmt.Errorf("unexpected reply %+v (code %v)", r, r.Code))
	}
	out.Decision = ratelimit.Decided(r.Code == admitAdmitted, r.Count, r.WaitMS)
	out.Description = Description{
		RateLimitPerMinute: r.Limit, Name: r.Name, Audience: r.Audience,
		OrgName: r.OrgName, OrgSlug: r.OrgSlug, Environment: r.Environment,
	}
	return out, nil
}
