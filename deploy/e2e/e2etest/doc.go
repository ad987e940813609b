// Package e2etest is the kit the end-to-end suites under deploy/e2e share
// to run the real servers as processes: the binaries built (kept in the
// user's cache and relinked only when their sources change) and run
// (BuildServers, StartProcess, WaitOK), the edge run from deploy/Caddyfile
// (StartEdge), the suites' REDIS_AUTOPIPELINE
// (AutoPipeline), and request helpers (Header, Basic, Bearer, Form). Log
// sinks come from pkg/logtest, Redis from pkg/redistest; both servers wired
// in one process are package inprocess's. It imports neither server, so the
// suites that only start processes (topology, clients) do not link them,
// nor Gin, into their test binaries. It is imported by tests only, as
// net/http/httptest is.
package e2etest
