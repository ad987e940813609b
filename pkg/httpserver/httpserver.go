package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// MaxHeaderBytes caps request headers; larger ones get 431 from net/http.
const MaxHeaderBytes = 32 << 10

// ShutdownTimeout bounds how long in-flight requests may finish on shutdown.
const ShutdownTimeout = 10 * time.Second

// Timeouts of every server. A connection that sends nothing, or its head
// slowly, holds a slot for at most ReadHeaderTimeout; a slow body for at
// most ReadTimeout; an idle keep-alive connection for at most IdleTimeout,
// and not at all once the connection limit is near (see MaxConns).
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
)

// Headroom of DefaultMaxConns: file descriptors left for everything but
// client connections (Redis pools, the listener, logs, key files), as a
// fixed part plus a tenth of the limit.
const fixedHeadroom = 128

// DefaultMaxConns is the connection limit when none is configured: the
// process's open file limit (RLIMIT_NOFILE) less a tenth and less 128, so
// that reaching it never makes accept(2) fail with EMFILE ("too many open
// files") nor starves the Redis connection pools; at least 64. 4,096 where
// the limit cannot be read.
func DefaultMaxConns() int {
	n, ok := openFileLimit()
	if !ok {
		return 4096
	}
	return maxConnsFor(n)
}

func maxConnsFor(nofile uint64) int {
	if nofile > 1<<24 {
		nofile = 1 << 24
	}
	n := int(nofile) - int(nofile)/10 - fixedHeadroom
	if n < 64 {
		n = 64
	}
	return n
}

// Option configures Serve.
type Option func(*options)

type options struct {
	maxConns int
	tls      *tls.Config
}

// TLS ends TLS on the listener with cfg (nil: plain HTTP). A TLS
// connection's requests carry its state (http.Request.TLS: the client's
// certificate, package clientcert). The framing watch of plain
// connections (RFC 9112 section 6.1, closeAmbiguous) sees only ciphertext
// below TLS and is off there: a client that ends its own TLS here has no
// proxy between it and the server that a smuggled request could pass.
func TLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// MaxConns limits the connections served at once to n (n <= 0:
// DefaultMaxConns). At the limit new connections wait in the kernel's
// accept queue until one closes. From seven eighths of it, keep-alive is
// turned off, which closes idle connections at once, until fewer than half
// are open.
func MaxConns(n int) Option { return func(o *options) { o.maxConns = n } }

// Serve serves h on ln until ctx ends, then shuts down gracefully: no new
// connections, in-flight requests get up to ShutdownTimeout. It returns nil
// after a clean shutdown. Connections are limited (MaxConns), and a request
// that carried both Content-Length and Transfer-Encoding gets its connection
// closed after the answer (RFC 9112 section 6.1).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxConns <= 0 {
		o.maxConns = DefaultMaxConns()
	}
	srv := &http.Server{
		Handler:           closeAmbiguous(h),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	lim := newListener(ln, o.maxConns, srv.SetKeepAlivesEnabled, logger)
	logger.Debug("connection limit", "max_conns", o.maxConns)
	var serving net.Listener = lim
	if o.tls != nil {
		srv.TLSConfig = o.tls
		serving = tls.NewListener(lim, o.tls)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serving) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}

type connKey struct{}

// closeAmbiguous answers with Connection: close a request whose connection
// saw both Content-Length and Transfer-Encoding (RFC 9112 section 6.1);
// net/http then closes the connection after the answer.
func closeAmbiguous(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*conn); ok && c.ambiguous.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// Probe GETs url and returns nil when it answers 200 within 3 seconds: the
// health check of images that have no shell or curl.
//
// An https URL on a loopback address is the probe of a server that ends
// TLS itself (--tls-cert): its certificate names the public host, never
// 127.0.0.1, so it is not verified there; the probe sends nothing secret
// and reads only the status. Any other https URL is verified as usual.
func Probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	hc := http.DefaultClient
	if ip := net.ParseIP(req.URL.Hostname()); req.URL.Scheme == "https" && ip != nil && ip.IsLoopback() {
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: answered %d", url, resp.StatusCode)
	}
	return nil
}

// ProbeURL is the default URL of a binary's healthcheck command: /readyz on
// loopback at HEALTHCHECK_PORT, else at the port of ADDR (the serve setting
// a container shares with its health check), else at defaultPort; over
// https when TLS_CERT_FILE is set (the server ends TLS itself).
func ProbeURL(getenv func(string) string, defaultPort string) string {
	port := getenv("HEALTHCHECK_PORT")
	if port == "" {
		if _, p, err := net.SplitHostPort(getenv("ADDR")); err == nil && p != "" {
			port = p
		} else {
			port = defaultPort
		}
	}
	scheme := "http"
	if getenv("TLS_CERT_FILE") != "" {
		scheme = "https"
	}
	return scheme + "://127.0.0.1:" + port + "/readyz"
}

// Healthcheck is the healthcheck command of both binaries, for container
// health checks in images without a shell or curl: it prints "ok" when url
// answers 200 and returns an error otherwise.
func Healthcheck(ctx context.Context, url string, stdout io.Writer) error {
	if err := Probe(ctx, url); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
