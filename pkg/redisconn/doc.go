// Package redisconn opens the Redis connection both servers share, from one
// REDIS_URL, as a go-redis UniversalClient: a single node, a Sentinel-managed
// primary, or a Cluster. The in-process Redis (miniredis) of the local stack
// lives in deploy/local, so no production binary links it.
//
// Every command of such a client has a budget (DefaultCommandBudget, 1.5
// s) that bounds it whatever Redis does, a frozen primary included, and
// commands refused while a Cluster slot moves (TRYAGAIN, ASK, MOVED,
// CLUSTERDOWN) are tried again inside it. RetryMoving tries a script
// refused that way again for longer (DefaultMoveBudget, 5 s, or the
// caller's deadline), so that a slot moved key by key costs latency, not
// errors: see budget.go.
//
// The servers' per-request scripts go through go-redis's automatic
// pipeliner with AutoPipelineOptions: the client's own on one node and with
// Sentinel, and on a Cluster one per primary (PrimaryPipes), on a client
// of that primary's own that carries the budget and the caller's hooks.
package redisconn
