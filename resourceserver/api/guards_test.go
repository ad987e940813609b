package api

// The guards the next release's endpoints will compose
// (apidocs/guides/scopes-and-audiences.md, rules 3 and 4 under Rules); no
// route of this release needs them, so they live with their tests until one
// does. Routes would use them after authentication, for
// example:
//
//	get(s.authenticated, "/organizations/:org/programmes/",
//		s.OrgGuard("org"), s.RequireScope(clients.ScopeProgrammeMetricsRead), s.programmes)

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// RequireScope admits only callers whose token carries every one of
// scopes; others get 403 with an insufficient_scope challenge (RFC 6750
// section 3.1; apidocs/guides/scopes-and-audiences.md, rule 3 under
// Rules). It must follow authentication.
func (s *server) RequireScope(scopes ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		cl, ok := callerOf(c)
		if !ok {
			s.fail(c, fmt.Errorf("RequireScope on %s without authentication", c.FullPath()))
			return
		}
		for _, sc := range scopes {
			if !cl.claims.HasScope(sc) {
				s.fail(c, insufficientScope(sc))
				return
			}
		}
		c.Next()
	}
}

// OrgGuard admits only requests whose path parameter param names the
// caller's own organisation (its slug). Any other organisation is answered
// exactly like a path or record that does not exist, 404 {"detail":"not
// found"}, so that existence elsewhere is never confirmed
// (apidocs/guides/scopes-and-audiences.md, rule 4 under Rules). Handlers
// that load a record by id check its organisation with ownsOrg and answer
// errNotFound the same way.
func (s *server) OrgGuard(param string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !ownsOrg(c, c.Param(param)) {
			s.fail(c, errNotFound)
			return
		}
		c.Next()
	}
}

// ownsOrg reports whether the request's caller belongs to the organisation
// slug; false without an authenticated caller.
func ownsOrg(c *gin.Context, slug string) bool {
	cl, ok := callerOf(c)
	return ok && slug != "" && cl.admission.Description.OrgSlug == slug
}

// insufficientScope is the 403 of a token without scope (RFC 6750 section
// 3.1, insufficient_scope; apidocs/guides/scopes-and-audiences.md, rule 3
// under Rules).
func insufficientScope(scope string) *problem {
	return &problem{
		status:    http.StatusForbidden,
		detail:    "the access token lacks the scope this endpoint needs: " + scope,
		challenge: realm + `, error="insufficient_scope", scope="` + scope + `"`,
	}
}
