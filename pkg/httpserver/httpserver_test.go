package httpserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepts connections after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if got := <-slow; got != "done" {
		t.Errorf("in-flight request got %q, want it completed", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after a clean shutdown, want nil", err)
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
