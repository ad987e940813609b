// Package e2etest is the kit the end-to-end suites under deploy/e2e share:
// both servers wired in one process on a real Redis (NewServers) behind the
// edge's routing (Edge), the real binaries built (kept in the user's cache
// and relinked only when their sources change) and run as processes
// (BuildServers, StartProcess, WaitOK), and request helpers (Header, Basic,
// Bearer, Form). Log sinks come from pkg/logtest, Redis from pkg/redistest.
// It is imported by tests only, as net/http/httptest is.
package e2etest
