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
//	go test -run TestSoak ./deploy/e2e/topology -soak=5m -timeout=15m
//
// with a rotation every 10 s.
//
// TestMetrics runs a real Prometheus (the Debian prometheus package) that
// scrapes every replica's metrics listener each second, drives the partner
// journey (tokens, /me, a 429, a rotation then a 401 with the old token, the
// old secret refused) and checks through Prometheus's query API that each
// counter moved by exactly what the journey did, that the alert rules of
// deploy/prometheus load, and that every series the Grafana dashboard and
// the alerts read exists.
//
// TestFreeze (long) stops a Cluster's and a Sentinel group's primary with
// SIGSTOP for 1.5 s and 5 s under load and checks that every request is
// answered within 2 s (200, or 503 with Retry-After); TestReshard (long)
// moves a live client's slot between primaries under load and checks that
// no request fails; TestReshardKeyByKey (long) moves it one key every
// 0.2-0.4 s, its keys split between two primaries for about 2 s, and checks
// that no request fails and each is answered within 2 s of the move's end.
//
// TestReplicaNotConfirmed (long) cuts a primary's replica links while an
// operator rotates a secret and creates a client.
//
// The quick tests run in parallel, each on Redis of its own or under a key
// prefix of its own on the shared Cluster and Sentinel group; the long ones
// run alone, before them. The servers pipeline their per-request scripts
// as they do by default (on);
// REDIS_AUTOPIPELINE=true or false in the test's environment sets both
// topologies alike (deploy/e2e/e2etest.AutoPipeline).
//
// The tests need redis-server and caddy (and prometheus for TestMetrics). Under CI=true a missing one is a
// failure; otherwise the test is skipped. go test -short skips it too.
package topology
