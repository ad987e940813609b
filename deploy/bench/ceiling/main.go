// Command ceiling is the bench harness's yardstick: the least a Gin server
// can do per request, measured like the real servers (its own process, its
// own CPU time and RSS) against the same requests.
//
//	ceiling --addr 127.0.0.1:PORT --body-file FILE   (REDIS_URL names Redis)
//
// GET /bare answers the body of FILE (a real /api/v1/me/ body, so the same
// length) as application/json, with no middleware at all. GET /redis makes
// one Redis round trip (EVALSHA of "return 1", loaded once) and then answers
// the same body: the least any endpoint that consults Redis per request can
// cost. GET /healthz answers 200 for the harness's start-up probe.
//
// The Redis client is the servers' own (pkg/redisconn), with the same pool.
// On a Cluster (a redis+cluster:// REDIS_URL, bench --redis-cluster) the
// script is loaded on every primary, and the EVALSHA, which names no key,
// goes to the primaries in turn (go-redis's default round-robin shard
// picker for keyless commands): the ceiling's Redis load is spread over
// the shards as the endpoints' per-client keys spread theirs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling: "+err.Error())
		os.Exit(1)
	}
}

// trivial is the script of /redis: one EVALSHA that touches no key.
var trivial = redis.NewScript("return 1")

const jsonContentType = "application/json; charset=utf-8"

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	bodyFile := fs.String("body-file", "", "the JSON body to answer (a real /api/v1/me/ body)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *bodyFile == "" {
		return errors.New("--body-file is required")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	rdb, err := redisconn.Open(getenv("REDIS_URL"))
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := trivial.Load(ctx, rdb).Err(); err != nil {
		return fmt.Errorf("load script: %w", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(rdb, body), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "ceiling listening on http://%s (%d-byte body)\n", ln.Addr(), len(body))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func newHandler(rdb redis.Scripter, body []byte) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/healthz", func(c *gin.Context) { c.Data(http.StatusOK, jsonContentType, []byte(`{"status":"ok"}`)) })
	e.GET("/bare", func(c *gin.Context) { c.Data(http.StatusOK, jsonContentType, body) })
	e.GET("/redis", func(c *gin.Context) {
		if err := trivial.Run(c.Request.Context(), rdb, nil).Err(); err != nil {
			c.Data(http.StatusServiceUnavailable, jsonContentType, []byte(`{"detail":"redis unavailable"}`))
			return
		}
		c.Data(http.StatusOK, jsonContentType, body)
	})
	return e
}
