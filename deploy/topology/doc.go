// Package topology holds the test of the production topology without
// Docker: a real redis-server, two token service and two resource server
// processes built from this repository, and the edge proxy (caddy, with
// deploy/Caddyfile), all on loopback ports. The partner journey runs through
// the edge, then again after one replica of each pool has been killed.
//
// TestSoak drives a fixed-rate load (100 requests a second) through the same
// topology while a client's secret is rotated with the CLI, and checks that
// no 5xx is answered, that no request sent with a rotated credential after
// the rotation returned is accepted, and that the servers' RSS stays flat.
// CI runs 25 seconds with a rotation every 5 s; the long run is
//
//	go test -run TestSoak ./deploy/topology -soak=5m -timeout=15m
//
// with a rotation every 10 s.
//
// The tests need redis-server and caddy. Under CI=true a missing one is a
// failure; otherwise the test is skipped. go test -short skips it too.
package topology
