package api

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// healthz answers while the process runs, checking no dependency.
func (s *server) healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

// readyz answers 200 when requests can be served: Redis answers (on a
// Cluster, every primary: the log names a shard that does not) and the
// token service's keys are loaded.
func (s *server) readyz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	if err := s.deps.Ready(c.Request.Context()); err != nil {
		s.fail(c, fmt.Errorf("%w: %w", errRedisNotReady, err))
		return
	}
	if _, err := s.deps.Keys.KeySet(); err != nil {
		s.fail(c, fmt.Errorf("%w: %w", errKeysNotReady, err))
		return
	}
	writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

// statusBody is the body of a probe's 200.
type statusBody struct {
	Status string `json:"status"`
}
