package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/partnerapi/authplatform/pkg/buildinfo"
)

// namespace starts every metric name of this project.
const namespace = "partnerapi"

// Path is where the metrics listener answers.
const Path = "/metrics"

// latencyBuckets (seconds) spread over what the servers answer in: from a
// cached verification (tens of microseconds) to a Redis timeout (1 s).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Metrics is one server instance's registry and the metrics both servers
// share. Create it with New; it is safe for concurrent use.
type Metrics struct {
	// Registry holds this instance's metrics only.
	Registry *prometheus.Registry

	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	redisDuration *prometheus.HistogramVec
	redisErrors   *prometheus.CounterVec
	tokenCache    *prometheus.CounterVec
}

// New returns a fresh registry holding the build information of service
// ("authserver" or "resourceserver"), the Go runtime and process metrics,
// and the HTTP, Redis and token cache metrics.
func New(service string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status class.",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help: "Time from a request's arrival to its answer, by route pattern.", Buckets: latencyBuckets,
		}, []string{"route"}),
		redisDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "redis_command_duration_seconds",
			Help: "Redis command round trips (a pipeline counts as one), by command.", Buckets: latencyBuckets,
		}, []string{"command"}),
		redisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "redis_errors_total",
			Help: "Redis commands and dials that failed (not a missing key), by command (\"dial\" for a connection attempt).",
		}, []string{"command"}),
		tokenCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "token_cache_requests_total",
			Help: "Lookups of the verified-token cache, by result (hit or miss).",
		}, []string{"result"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(service),
		m.httpRequests, m.httpDuration, m.redisDuration, m.redisErrors, m.tokenCache,
	)
	m.redisErrors.WithLabelValues("dial")
	m.tokenCache.WithLabelValues("hit")
	m.tokenCache.WithLabelValues("miss")
	return m
}

// buildInfo is the constant 1 labelled with the build: the module version
// and the VCS commit the binary was built from (package buildinfo;
// "unknown" when the binary carries none, as under go test).
func buildInfo(service string) prometheus.Collector {
	bi := buildinfo.Read()
	version, revision, modified := bi.Version, bi.Revision, strconv.FormatBool(bi.Modified)
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; the labels name the service and the build (module version, VCS commit, uncommitted changes, Go version).",
		ConstLabels: prometheus.Labels{
			"service": service, "version": version, "revision": revision, "modified": modified,
			"goversion": bi.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// TokenCache counts one lookup of a verified-token cache.
func (m *Metrics) TokenCache(hit bool) {
	if hit {
		m.tokenCache.WithLabelValues("hit").Inc()
	} else {
		m.tokenCache.WithLabelValues("miss").Inc()
	}
}

// Handler answers the scrape of GET /metrics in the Prometheus exposition
// formats (the metrics listener routes it: httpserver.Group).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// since is the seconds elapsed since start.
func since(start time.Time) float64 { return time.Since(start).Seconds() }
