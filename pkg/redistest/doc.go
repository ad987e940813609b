// Package redistest gives tests a real Redis: the one named by REDIS_URL or
// listening on 127.0.0.1:6379, each test isolated by its own key prefix, and
// redis-server processes of their own for tests that stop or kill Redis.
//
// When no Redis answers, tests fall back to an in-process miniredis, except
// under CI=true, where a missing Redis fails the test instead.
package redistest
