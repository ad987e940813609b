package httpserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestServeShutsDownGracefully: a request in flight when the context ends
// completes, new connections are refused, and Serve returns nil.
func TestServeShutsDownGracefully(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inHandler, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(inHandler)
			<-release
		}
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpserver.Serve(ctx, ln, h, slog.New(slog.DiscardHandler)) }()
	base := "http://" + ln.Addr().String()

	if err := httpserver.Probe(context.Background(), base+"/ready"); err != nil {
		t.Fatalf("Probe of a 200: %v", err)
	}
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	<-inHandler
	cancel()
	// Shutdown closes the listener before it waits for the slow request.
	testwait.Eventually(t, 5*time.Second, "the listener refuses connections after shutdown began", refuses(ln.Addr().String()))
	close(release)
	if got := <-slow; got != "done" {
		t.Errorf("in-flight request got %q, want it completed", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after a clean shutdown, want nil", err)
	}
}

// refuses returns a condition: a connection to addr is refused.
func refuses(addr string) func() bool {
	return func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	}
}

func TestProbeFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go httpserver.Serve(ctx, ln, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	base := "http://" + ln.Addr().String()
	if err := httpserver.Probe(context.Background(), base+"/readyz"); err == nil || !strings.Contains(err.Error(), "answered 404") {
		t.Errorf("Probe of a 404 = %v, want an error naming the status", err)
	}
	if err := httpserver.Probe(context.Background(), "http://127.0.0.1:1/readyz"); err == nil {
		t.Error("Probe of a closed port succeeded")
	}
	if err := httpserver.Probe(context.Background(), "::not a url"); err == nil {
		t.Error("Probe of a bad URL succeeded")
	}
}

// TestProbeTLS: the healthcheck of a server ending TLS itself probes
// https on loopback (TLS_CERT_FILE set) and accepts its certificate, made
// for the public host; the certificate of any other host is verified.
func TestProbeTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	env := map[string]string{"HEALTHCHECK_PORT": port, "TLS_CERT_FILE": "/etc/tls/server.pem"}
	url := httpserver.ProbeURL(func(k string) string { return env[k] }, "8080")
	if want := "https://127.0.0.1:" + port + "/readyz"; url != want {
		t.Fatalf("ProbeURL with TLS_CERT_FILE = %q, want %q", url, want)
	}
	if err := httpserver.Probe(context.Background(), url); err != nil {
		t.Errorf("Probe of the server's own https on loopback: %v", err)
	}
	if url := httpserver.ProbeURL(func(k string) string { return map[string]string{"HEALTHCHECK_PORT": port}[k] }, "8080"); !strings.HasPrefix(url, "http://") {
		t.Errorf("ProbeURL without TLS_CERT_FILE = %q, want http", url)
	}
	// localhost is a name, not a loopback address: verified, and refused.
	if err := httpserver.Probe(context.Background(), "https://localhost:"+port+"/readyz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Probe of an unverifiable certificate by name = %v, want a certificate error", err)
	}
}
