package clients

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

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
}

// TokenRefOf names a verified access token by its claims.
func TokenRefOf(c *accesstoken.Claims) TokenRef {
	return TokenRef{ClientID: c.ClientID, Generation: c.Generation, SecretID: c.CredentialID(), ID: c.ID, ExpiresAt: c.ExpiresAt}
}

// admitAPIScript checks a token's standing and counts the API request,
// returning what GET /api/v1/me/ shows; admit.lua documents it.
var admitAPIScript = redis.NewScript(ratelimit.WindowLua + admitLua)

//go:embed admit.lua
var admitLua string

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
	r, err := admitAPIScript.Run(ctx, s.hot, []string{s.clientKey(t.ClientID), s.apiLogKey(t.ClientID), s.revokedTokenKey(t.ClientID, t.ID)},
		t.Generation, ratelimit.NowArg(now), Window.Milliseconds(), t.SecretID, t.ExpiresAt).Slice()
	if err != nil {
		return APIAdmission{}, unavailable("admit API request", err)
	}
	if len(r) == 1 {
		return APIAdmission{Outcome: Dead}, nil
	}
	if len(r) != 9 {
		return APIAdmission{}, unavailable("admit API request", fmt.Errorf("unexpected reply of %d values", len(r)))
	}
	num := func(v any) int64 { n, _ := v.(int64); return n }
	a := APIAdmission{
		Outcome:  Outcome(num(r[0])),
		Decision: ratelimit.FromScript(2-num(r[0]), num(r[1]), num(r[2])),
		Description: Description{
			RateLimitPerMinute: num(r[3]), Name: str(r[4]), Audience: str(r[5]),
			OrgName: str(r[6]), OrgSlug: str(r[7]), Environment: str(r[8]),
		},
	}
	return a, nil
}
