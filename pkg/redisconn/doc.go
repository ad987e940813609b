// Package redisconn opens the Redis connection both servers share, from one
// REDIS_URL, as a go-redis UniversalClient: a single node, a Sentinel-managed
// primary, or a Cluster. It also starts the in-process Redis (miniredis) that
// the local stack uses when no REDIS_URL is given.
package redisconn
