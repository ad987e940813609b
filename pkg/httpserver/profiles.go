package httpserver

import (
	"net/http"
	"net/http/pprof"
)

// ProfilesPath is where ProfileRoutes serve the Go runtime's profiles.
const ProfilesPath = "/debug/pprof/"

// ProfileRoutes are the routes of net/http/pprof, the Go runtime's
// profiles in the format go tool pprof reads (and go build's -pgo takes):
// the index and every named profile (heap, goroutine, allocs, ...), the
// CPU profile (profile?seconds=N, shorter than WriteTimeout), the
// execution trace, the command line and symbol lookup. They are served
// only on the metrics listener, and only when asked (serve --pprof): a
// profile shows the process's code paths and command line, and a CPU
// profile or a trace keeps a connection busy for its seconds.
//
// Taken from net/http/pprof rather than written: its handlers are the
// format's reference. Its import also registers them on
// http.DefaultServeMux, which nothing here serves.
func ProfileRoutes() []Route {
	get := func(path string, h http.HandlerFunc) Route {
		return Route{Pattern: http.MethodGet + " " + ProfilesPath + path, Handler: h}
	}
	return []Route{
		get("", pprof.Index),
		get("{name}", pprof.Index), // a named profile: /debug/pprof/heap
		get("cmdline", pprof.Cmdline),
		get("profile", pprof.Profile),
		get("symbol", pprof.Symbol),
		{Pattern: http.MethodPost + " " + ProfilesPath + "symbol", Handler: http.HandlerFunc(pprof.Symbol)},
		get("trace", pprof.Trace),
	}
}
