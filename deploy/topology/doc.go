// Package topology holds the test of the production topology without
// Docker: a real redis-server, two token service and two resource server
// processes built from this repository, and the edge proxy (caddy, with
// deploy/Caddyfile), all on loopback ports. The partner journey runs through
// the edge, then again after one replica of each pool has been killed.
//
// The test needs redis-server and caddy. Under CI=true a missing one is a
// failure; otherwise the test is skipped. go test -short skips it too.
package topology
