package adminapi

import (
	"net/http"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// Prefix of every admin API path.
const Prefix = "/admin/v1"

// routes lists every endpoint of the admin API.
func (s *Server) routes() []route {
	return []route{
		{http.MethodGet, Prefix + "/openapi.json", public, s.handleOpenAPI},
		{http.MethodGet, Prefix + "/orgs", read, s.handleListOrgs},
		{http.MethodPost, Prefix + "/orgs", write, s.handleCreateOrg},
		{http.MethodGet, Prefix + "/orgs/{slug}", read, s.handleGetOrg},
		{http.MethodGet, Prefix + "/orgs/{slug}/audit", read, s.handleOrgAudit},
		{http.MethodGet, Prefix + "/clients", read, s.handleListClients},
		{http.MethodPost, Prefix + "/clients", write, s.handleCreateClient},
		{http.MethodGet, Prefix + "/clients/{client_id}", read, s.handleGetClient},
		{http.MethodPost, Prefix + "/clients/{client_id}/rotate-secret", write, s.handleRotateSecret},
		{http.MethodPost, Prefix + "/clients/{client_id}/secrets", write, s.handleAddSecret},
		{http.MethodDelete, Prefix + "/clients/{client_id}/secrets/{secret_id}", write, s.handleRetireSecret},
		{http.MethodPut, Prefix + "/clients/{client_id}/keys", write, s.handleRotateKeys},
		{http.MethodPost, Prefix + "/clients/{client_id}/revoke", write, s.handleRevoke},
		{http.MethodPut, Prefix + "/clients/{client_id}/rate-limit", write, s.handleSetRateLimit(false)},
		{http.MethodPut, Prefix + "/clients/{client_id}/token-rate-limit", write, s.handleSetRateLimit(true)},
		{http.MethodPut, Prefix + "/clients/{client_id}/dpop-bound", write, s.handleSetDPoPBound},
		{http.MethodGet, Prefix + "/clients/{client_id}/audit", read, s.handleClientAudit},
		{http.MethodGet, Prefix + "/keys", read, s.handleListKeys},
		{http.MethodPost, Prefix + "/keys/{kid}/withdraw", write, s.handleWithdrawKey},
		{http.MethodPost, Prefix + "/sandbox/seed", write, s.handleSeedSandbox},
		{http.MethodGet, Prefix + "/audit", read, s.handleAdminAudit},
	}
}

// ConsolePrefix is the path of the operator console's pages, on the same
// listener and origin as the API.
const ConsolePrefix = "/console/"

// consoleRoutes mount the operator console (its own pages are listed in
// package authserver/console): every page under ConsolePrefix, and the
// bare /console sent there.
func consoleRoutes(console http.Handler) []httpserver.Route {
	return []httpserver.Route{
		{Pattern: "GET /console", Handler: http.RedirectHandler(ConsolePrefix, http.StatusMovedPermanently)},
		{Pattern: "GET " + ConsolePrefix + "{page...}", Handler: console},
		{Pattern: "POST " + ConsolePrefix + "{page...}", Handler: console},
	}
}
