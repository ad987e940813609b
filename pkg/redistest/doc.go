// Package redistest gives tests a real Redis: the one named by REDIS_URL or
// listening on 127.0.0.1:6379, each test isolated by its own key prefix, and
// redis-server processes of their own for tests that stop or kill Redis.
//
// StartCluster and StartSentinel start replicated Redis the way operators
// run it (a Cluster of 3 primaries and 3 replicas; a primary, a replica and
// 3 sentinels), from the Debian packages' redis-server and redis-sentinel,
// on loopback. Topologies shares one of each among a package's tests; such
// a package runs its tests through RunMain, which stops them at the end.
// Faults: Freeze and Thaw stop and continue a node (SIGSTOP, SIGCONT);
// Cluster.MoveSlot moves a slot between primaries as a reshard does, with
// a hold that widens its MIGRATING/IMPORTING window.
//
// When no Redis answers, tests fall back to an in-process miniredis, except
// under CI=true, where a missing Redis fails the test instead.
package redistest
