// Package resilience holds the tests of how the service behaves when its
// Redis fails, with both servers in one test process, each with a Redis
// client of its own as in production, against a redis-server the test
// starts and kills itself (pkg/redistest):
//
//   - TestRedisOutage: under load, Redis is killed; the token endpoint
//     answers 503 temporarily_unavailable and GET /api/v1/me/ 503
//     {"detail"}, both with Retry-After, and nothing is served whose client
//     state was not read. Redis restarts on the same port and both servers
//     answer 200 again within 2 seconds, without a restart of their own; no
//     panic, no goroutine left behind.
//   - TestRedisUnreachable (Linux): a Redis host that drops packets, as
//     across a partition, where a killed one refuses connections at once;
//     both servers still answer their 503 within a few seconds, never hold
//     a request for long.
//   - TestDurability: with Redis configured as docker-compose.yml configures
//     it (appendonly yes, appendfsync always), a rotation and a revocation
//     survive a SIGKILL of Redis sent the moment the commands return.
//
// The long run through the multi-process topology (a soak under secret
// rotation) is TestSoak in deploy/e2e/topology.
//
// TestRedisOutage and TestDurability need redis-server: under CI=true a
// missing one fails them, otherwise they are skipped.
package resilience
