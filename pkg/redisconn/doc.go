// Package redisconn opens the Redis connection both servers share, from one
// REDIS_URL, as a go-redis UniversalClient: a single node, a Sentinel-managed
// primary, or a Cluster. The in-process Redis (miniredis) of the local stack
// lives in deploy/local, so no production binary links it.
package redisconn
