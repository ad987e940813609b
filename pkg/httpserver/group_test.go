package httpserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestGroup serves an API, an admin and a metrics listener together: the
// API's and the admin's answers are counted in the metrics listener's
// registry (by their base layer, as the servers wire it), the metrics
// listener routes GET /metrics only (404 and 405 as {"detail"}), an off
// listener binds nothing, and on cancellation the metrics listener still
// answers while the API drains an in-flight request, then every listener
// stops.
func TestGroup(t *testing.T) {
	m := metrics.New("test")
	g := httpserver.NewGroup(nil, m)
	api, err := g.Listen(httpserver.API, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := g.Listen(httpserver.Admin, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := g.Listen("other", httpserver.Off); a != nil || err != nil {
		t.Fatalf("off: %v %v", a, err)
	}
	mets, err := g.ListenMetrics("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Listen(httpserver.Admin, api.String()); err == nil || !strings.Contains(err.Error(), "listen on "+api.String()+" (admin)") {
		t.Errorf("a port in use: %v", err)
	}
	inHandler, release := make(chan struct{}), make(chan struct{})
	g.Handle(httpserver.API, httpserver.Base{Observer: m}.Wrap(httpserver.NewRouter([]httpserver.Route{
		{Pattern: "GET /slow", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inHandler)
			<-release
			io.WriteString(w, "done")
		})},
		{Pattern: "GET /fast", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fast") })},
	}, httpserver.DetailMisrouted)))
	g.Handle(httpserver.Admin, httpserver.Base{Observer: m}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "admin") })))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx) }()

	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if s, b := get("http://" + api.String() + "/fast"); s != 200 || b != "fast" {
		t.Errorf("api: %d %s", s, b)
	}
	if s, b := get("http://" + admin.String() + "/x"); s != 200 || b != "admin" {
		t.Errorf("admin: %d %s", s, b)
	}
	for path, want := range map[string]string{"/": `{"detail":"not found"}`, "/metrics/": `{"detail":"not found"}`,
		"/debug/pprof/": `{"detail":"not found"}`, "/debug/pprof/heap": `{"detail":"not found"}`} { // the profiles only when asked
		if s, b := get("http://" + mets.String() + path); s != 404 || b != want {
			t.Errorf("metrics %s: %d %s", path, s, b)
		}
	}
	res, err := http.Post("http://"+mets.String()+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 405 || string(b) != `{"detail":"method not allowed"}` || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /metrics: %d %s %v", res.StatusCode, b, res.Header)
	}
	res.Body.Close()

	slow := make(chan string, 1)
	go func() { _, b := get("http://" + api.String() + "/slow"); slow <- b }()
	<-inHandler
	cancel()
	// The API stops accepting; the metrics still answer, counting the
	// admin's request and the API's.
	testwait.Eventually(t, 5*time.Second, "the API refuses connections after shutdown began", refuses(api.String()))
	s, b := get("http://" + mets.String() + "/metrics")
	if s != 200 || !strings.Contains(b, `partnerapi_http_requests_total{code="2xx",method="GET",route="/fast"} 1`) ||
		!strings.Contains(b, `partnerapi_http_requests_total{code="2xx",method="GET",route="unmatched"} 1`) {
		t.Errorf("metrics during the API's shutdown: %d\n%s", s, b)
	}
	close(release)
	if got := <-slow; got != "done" {
		t.Errorf("in-flight request got %q", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after a clean shutdown", err)
	}
	if _, err := net.DialTimeout("tcp", mets.String(), 100*time.Millisecond); err == nil {
		t.Error("the metrics listener outlived Serve")
	}
}

// With profiling, the metrics listener also serves net/http/pprof: the
// index, a named profile, the command line, a CPU profile (gzipped
// protobuf, what go tool pprof and go build -pgo read); other methods get
// 405 {"detail"}, and the API listener serves none of it.
func TestGroupProfiles(t *testing.T) {
	g := httpserver.NewGroup(nil, metrics.New("test"))
	api, err := g.Listen(httpserver.API, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mets, err := g.ListenMetrics("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	g.Handle(httpserver.API, httpserver.NewRouter(nil, httpserver.DetailMisrouted))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	do := func(method, url string) (int, http.Header, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	base := "http://" + mets.String() + httpserver.ProfilesPath
	if s, h, b := do("GET", base); s != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "goroutine") {
		t.Errorf("index: %d %v %.200s", s, h, b)
	}
	if s, _, b := do("GET", base+"heap?debug=1"); s != 200 || !strings.Contains(string(b), "heap profile:") {
		t.Errorf("heap: %d %.200s", s, b)
	}
	if s, _, b := do("GET", base+"cmdline"); s != 200 || !strings.Contains(string(b), "httpserver.test") {
		t.Errorf("cmdline: %d %.200s", s, b)
	}
	if s, h, b := do("GET", base+"profile?seconds=1"); s != 200 || h.Get("Content-Type") != "application/octet-stream" ||
		len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("CPU profile: %d %v %x", s, h, b[:min(len(b), 8)])
	}
	if s, _, b := do("DELETE", base+"heap"); s != 405 || string(b) != `{"detail":"method not allowed"}` {
		t.Errorf("DELETE heap: %d %s", s, b)
	}
	if s, _, b := do("GET", "http://"+api.String()+httpserver.ProfilesPath); s != 404 || string(b) != `{"detail":"not found"}` {
		t.Errorf("the API listener: %d %s", s, b)
	}
}

// A listener without a handler fails Serve and unbinds everything.
func TestGroupWithoutHandler(t *testing.T) {
	g := httpserver.NewGroup(nil, nil)
	a, err := g.Listen(httpserver.API, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Serve(context.Background()); err == nil || !strings.Contains(err.Error(), "listener api has no handler") {
		t.Errorf("Serve = %v", err)
	}
	if c, err := net.Dial("tcp", a.String()); err == nil {
		c.Close()
		t.Error("still bound")
	}
}
