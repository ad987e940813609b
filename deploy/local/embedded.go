package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// embedded is an in-process Redis (miniredis): the local stack's default
// when REDIS_URL is unset. It keeps nothing on disk and lives as long as the
// process. It lives here, not in pkg/, so that neither production binary
// links it.
type embedded struct {
	srv *miniredis.Miniredis
}

// startEmbedded starts an in-process Redis on a free loopback port.
func startEmbedded() (*embedded, error) {
	srv := miniredis.NewMiniRedis()
	// Let TTLs run on the wall clock, as on a real Redis, so rate-limit
	// keys of a long-running local stack expire.
	srv.ClockTTL(true)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start in-process redis: %w", err)
	}
	return &embedded{srv: srv}, nil
}

// url is the redis:// URL of the embedded server.
func (e *embedded) url() string { return "redis://" + e.srv.Addr() + "/0" }

// close stops the embedded server.
func (e *embedded) close() { e.srv.Close() }
