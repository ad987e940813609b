package main

import (
	"slices"
	"time"
)

// Scenario names.
const (
	scToken = "token"
	scMe    = "me"
	// scMeDPoP is me with DPoP-bound tokens and a fresh proof per request
	// (dpopload.go).
	scMeDPoP     = "me-dpop"
	scIntrospect = "introspect"
	scBare       = "bare"
	scRedis      = "redis"
	// scSign is the token endpoint's floor: the ceiling's POST /sign (one
	// round trip, one signed token) under the token load; scAdmit is
	// /me's: the ceiling's GET /admit (the bearer admission, the fixed
	// body) under the /me load.
	scSign  = "sign"
	scAdmit = "admit"
	// scAuthSign is the token endpoint's floor with its client
	// authentication: the ceiling's POST /authsign (the registry's
	// authentication script as the one round trip, one signed token) under
	// the token load; scAuthCheck is introspection's: the ceiling's POST
	// /authcheck (the cached verification, the caller's authentication with
	// the token's standing, the claims answered) under the introspection
	// load. Both do in Redis what the spec asks of each request (failure
	// accounting, the token limit, the token's standing), which "return 1"
	// does not.
	scAuthSign  = "authsign"
	scAuthCheck = "authcheck"
	// The hot scenarios run the token and /me load concentrated on a few
	// clients with high limits (--hot-clients), at the largest registry
	// only: a client's cost must not grow with its own traffic.
	scTokenHot = "token-hot"
	scMeHot    = "me-hot"
	// The Hydra scenarios run Ory Hydra's token and introspection
	// endpoints (--hydra-bin) with the load of token and introspect, at the
	// largest registry only.
	// The token-tls scenarios run the token load against the authserver
	// that ends TLS itself, with a client certificate (tlsload.go): a new
	// connection per request, or kept connections.
	scTokenTLS          = "token-tls"
	scTokenTLSKeepAlive = "token-tls-keepalive"
	scHydraToken        = "hydra-token"
	scHydraIntrospect   = "hydra-introspect"
)

// The processes a scenario can measure (scenario.Server).
const (
	srvAuth     = "authserver"
	srvResource = "resourceserver"
	srvCeiling  = "ceiling"
	srvHydra    = "hydra"
	// srvAuthTLS is the authserver with --tls-cert (tlsload.go).
	srvAuthTLS = "authserver-tls"
)

// The kinds of load (scenario.Load): each a wrk script (wrk/<kind>.lua,
// after wrk/common.lua) and, but for me-dpop's proofs signed per run, a
// data file per registry size (writeData).
const (
	loadToken      = "token"
	loadMe         = "me"
	loadIntrospect = "introspect"
	loadMeDPoP     = "me-dpop"
	// The token-tls loads are Go's, not wrk's (tlsload.go).
	loadTokenTLS          = "token-tls"
	loadTokenTLSKeepAlive = "token-tls-keepalive"
)

// scenario is one row of the scenario table: everything the harness
// knows of a scenario but what its load sends (the wrk script of its
// Load). A new scenario is a new row; a new kind of load, a new script.
type scenario struct {
	Name string
	// Label is its row's name in the results table.
	Label string
	// Server is the process it measures (srvAuth, srvResource, srvCeiling,
	// srvHydra); Admin puts its requests on Hydra's admin API instead of
	// its public one.
	Server string
	Admin  bool
	// Path is the path wrk requests on that server.
	Path string
	// Load is the kind of load it runs (loadToken, ...).
	Load string
	// Floor is the floor an endpoint is shown against (issue 28: "what
	// floor remains"): the least the ceiling can do that does the
	// endpoint's unavoidable work. AuthFloor is, for the authserver's
	// endpoints, the floor that also makes the endpoint's own Redis
	// script. Hydra is Ory Hydra's scenario it is compared with; Hot, for
	// a hot scenario, the one it concentrates.
	Floor, AuthFloor, Hydra, Hot string
	// PGO feeds its runs' profiles into the one its server is built with
	// (--pgo-out): the endpoints the targets measure.
	PGO bool
}

// scenarios is the scenario table, in the order of the results table
// and of the runs in a repetition.
var scenarios = []scenario{
	{Name: scBare, Label: "ceiling: bare Gin JSON", Server: srvCeiling, Path: "/bare", Load: loadMe},
	{Name: scRedis, Label: "ceiling: Gin + 1 Redis EVALSHA", Server: srvCeiling, Path: "/redis", Load: loadMe},
	{Name: scSign, Label: "floor of token: Gin + 1 Redis EVALSHA + 1 signed token", Server: srvCeiling, Path: "/sign", Load: loadToken},
	{Name: scAdmit, Label: "floor of me: Gin + the bearer admission (pkg/admission)", Server: srvCeiling, Path: "/admit", Load: loadMe},
	{Name: scAuthSign, Label: "floor of token with its authentication: Gin + the authentication script (pkg/clients) + 1 signed token",
		Server: srvCeiling, Path: "/authsign", Load: loadToken},
	{Name: scAuthCheck, Label: "floor of introspect: Gin + the cached verification + the caller's authentication with the token's standing (pkg/clients)",
		Server: srvCeiling, Path: "/authcheck", Load: loadIntrospect},
	{Name: scToken, Label: "token: POST /api/v1/oauth/token/", Server: srvAuth, Path: "/api/v1/oauth/token/", Load: loadToken,
		Floor: scSign, AuthFloor: scAuthSign, Hydra: scHydraToken, PGO: true},
	{Name: scTokenTLS, Label: "token-tls: POST /api/v1/oauth/token/ over TLS with a client certificate, a new connection per request",
		Server: srvAuthTLS, Path: "/api/v1/oauth/token/", Load: loadTokenTLS},
	{Name: scTokenTLSKeepAlive, Label: "token-tls-keepalive: the same over kept TLS connections",
		Server: srvAuthTLS, Path: "/api/v1/oauth/token/", Load: loadTokenTLSKeepAlive},
	{Name: scMe, Label: "me: GET /api/v1/me/", Server: srvResource, Path: "/api/v1/me/", Load: loadMe, Floor: scAdmit, PGO: true},
	{Name: scMeDPoP, Label: "me-dpop: GET /api/v1/me/, DPoP-bound token + proof", Server: srvResource, Path: "/api/v1/me/", Load: loadMeDPoP},
	{Name: scIntrospect, Label: "introspect: POST /api/v1/oauth/introspect/", Server: srvAuth, Path: "/api/v1/oauth/introspect/", Load: loadIntrospect,
		AuthFloor: scAuthCheck, Hydra: scHydraIntrospect, PGO: true},
	{Name: scHydraToken, Label: "hydra-token: Ory Hydra POST /oauth2/token", Server: srvHydra, Path: "/oauth2/token", Load: loadToken},
	// Hydra's admin introspection takes no client authentication.
	{Name: scHydraIntrospect, Label: "hydra-introspect: Ory Hydra POST /admin/oauth2/introspect (no caller auth)",
		Server: srvHydra, Admin: true, Path: "/admin/oauth2/introspect", Load: loadIntrospect},
	{Name: scTokenHot, Label: "token, load on the hot clients", Server: srvAuth, Path: "/api/v1/oauth/token/", Load: loadToken, Hot: scToken},
	{Name: scMeHot, Label: "me, load on the hot clients", Server: srvResource, Path: "/api/v1/me/", Load: loadMe, Hot: scMe},
}

// scenarioOrder is the scenarios' names in the table's order.
var scenarioOrder = func() []string {
	names := make([]string, len(scenarios))
	for i, sc := range scenarios {
		names[i] = sc.Name
	}
	return names
}()

// scenarioOf is the table's row of the scenario named name (the zero
// scenario for an unknown name).
func scenarioOf(name string) scenario {
	if i := slices.IndexFunc(scenarios, func(sc scenario) bool { return sc.Name == name }); i >= 0 {
		return scenarios[i]
	}
	return scenario{}
}

// isHydra reports whether sc measures Ory Hydra.
func isHydra(sc string) bool { return scenarioOf(sc).Server == srvHydra }

// servingProcess names the process that serves a scenario's load and is
// profiled (--pgo-out, --profiles): the endpoints' servers, and the
// ceiling for the ceilings and floors ("" for Hydra's, which is not
// profiled).
func servingProcess(sc string) string {
	if s := scenarioOf(sc).Server; s != srvHydra {
		return s
	}
	return ""
}

// redisCPUCell is a row's Redis CPU/req: Hydra uses no Redis, so what
// redis-server spent idling during its runs is not shown as its cost.
func redisCPUCell(sc string, d time.Duration) string {
	if isHydra(sc) {
		return "— (no Redis)"
	}
	return fmtDur(d)
}
