// Package inprocess wires both servers in one process on a real Redis, as
// deploy/local does (NewServers), behind the edge's routing (Edge,
// IsAuthPath), with helpers that create an organisation and a client in
// the registry (NewOrg, NewClient). The suites that call the servers'
// handlers directly use it (faults, resilience, sdk); the ones that run
// the built binaries use package e2etest alone. It is imported by tests
// only, as net/http/httptest is.
package inprocess
