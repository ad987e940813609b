//go:build unix

package topology

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestMetrics runs a real Prometheus (the Debian prometheus package)
// scraping both pools of the topology every second, drives the partner
// journey through the edge (tokens, /me, a 429, a rotation then a 401 with
// the old token, the old secret refused), and asserts through Prometheus's
// query API that the counters moved by exactly what the journey did. The
// alert rules of deploy/prometheus/alerts.yml are loaded into it too.
func TestMetrics(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()      // beside the other quick tests; the long ones run alone first
	if testing.Short() {
		t.Skip("-short: this test builds the servers and starts seven processes")
	}
	requireCommand(t, "redis-server")
	requireCommand(t, "caddy")
	requireCommand(t, "prometheus")
	top := startTopology(t, 2, 2)
	prom := startPrometheus(t, top)

	// Every replica is a target that is up.
	prom.waitFor(t, `count(up{job="authserver"} == 1)`, 2)
	prom.waitFor(t, `count(up{job="resourceserver"} == 1)`, 2)
	prom.waitFor(t, `count(partnerapi_build_info{service="authserver",revision!=""})`, 2)
	prom.waitFor(t, `count(partnerapi_build_info{service="resourceserver"})`, 2)

	// The metrics are on their own listener: the edge routes /metrics to
	// neither pool's metrics, and the partner-facing ports answer 404.
	for _, base := range []string{top.edge, top.auth[0].base, top.resource[0].base} {
		if a := top.get(t, base+"/metrics"); a.status != http.StatusNotFound {
			t.Errorf("GET %s/metrics: %d, want 404", base, a.status)
		}
	}

	// Counts before the journey (startTopology sent requests of its own).
	queries := map[string]string{
		"issued":         `sum(partnerapi_tokens_issued_total)`,
		"invalid_client": `sum(partnerapi_token_refusals_total{endpoint="token",reason="invalid_client"})`,
		"checked":        `sum(partnerapi_client_credentials_checked_total)`,
		"me_2xx":         `sum(partnerapi_http_requests_total{job="resourceserver",route="/api/v1/me/",method="GET",code="2xx"})`,
		"me_4xx":         `sum(partnerapi_http_requests_total{job="resourceserver",route="/api/v1/me/",method="GET",code="4xx"})`,
		"token_2xx":      `sum(partnerapi_http_requests_total{job="authserver",route="/api/v1/oauth/token/",method="POST",code="2xx"})`,
		"rate_limited":   `sum(partnerapi_api_refusals_total{status="429",reason="rate_limited"})`,
		"revoked":        `sum(partnerapi_api_refusals_total{status="401",reason="revoked"})`,
		"cache_hits":     `sum(partnerapi_token_cache_requests_total{job="resourceserver",result="hit"})`,
		"cache_misses":   `sum(partnerapi_token_cache_requests_total{job="resourceserver",result="miss"})`,
		"me_duration":    `sum(partnerapi_http_request_duration_seconds_count{job="resourceserver",route="/api/v1/me/"})`,
	}
	before := map[string]float64{}
	for name, q := range queries {
		before[name] = prom.value(t, q)
	}

	// The journey: a client limited to rateLimit API requests a minute.
	c := top.createClient(t, "patients.read")
	top.cli(t, "clients", "set-rate-limit", c.ID, strconv.Itoa(rateLimit))
	old := top.token(t, c, basicAuth)                              // issued 1, checked 1
	top.wantMe(t, top.edge, old, c.ID)                             // 2xx 1, cache miss (a replica's first sight)
	top.wantMe(t, top.edge, old, c.ID)                             // 2xx 2
	top.wantMe(t, top.edge, old, c.ID)                             // 2xx 3
	top.wantMe(t, top.edge, old, c.ID)                             // 2xx 4: the limit
	top.wantMeStatus(t, top.edge, old, http.StatusTooManyRequests) // 429
	rotated := top.cliCredentials(t, "clients", "rotate-secret", c.ID)
	top.wantMeStatus(t, top.edge, old, http.StatusUnauthorized) // 401 revoked
	top.wantInvalidClient(t, c)                                 // invalid_client 1, checked 2
	top.token(t, rotated, formAuth)                             // issued 2, checked 3

	want := map[string]float64{
		"issued": 2, "invalid_client": 1, "checked": 3, "me_2xx": rateLimit, "me_4xx": 2, "token_2xx": 2,
		"rate_limited": 1, "revoked": 1, "me_duration": rateLimit + 2,
	}
	for name, delta := range want {
		prom.waitFor(t, queries[name], before[name]+delta)
	}
	// Six requests with one token over two replicas: each replica verifies
	// its signature once (a miss), every later request is a hit.
	hits := prom.value(t, queries["cache_hits"]) - before["cache_hits"]
	misses := prom.value(t, queries["cache_misses"]) - before["cache_misses"]
	if hits+misses != rateLimit+2 || misses < 1 || misses > 2 {
		t.Errorf("token cache: %v hits and %v misses for %d requests with one token over 2 replicas", hits, misses, rateLimit+2)
	}

	// Redis commands are observed on both pools, the per-request scripts
	// among them (alone, or in a batch of the automatic pipeliner), and
	// none failed.
	prom.waitFor(t, `count(sum by (job) (partnerapi_redis_command_duration_seconds_count) > 0)`, 2)
	prom.waitFor(t, `count(sum by (job) (partnerapi_redis_command_duration_seconds_count{command=~"evalsha|eval|pipeline"}) > 0)`, 2)
	if v := prom.value(t, `sum(partnerapi_redis_errors_total)`); v != 0 {
		t.Errorf("partnerapi_redis_errors_total = %v, want 0: %s", v, prom.raw(t, `partnerapi_redis_errors_total > 0`))
	}
	// Each replica keeps its collector's heap floor (pkg/heapfloor: GOGC
	// is not set here, and a few MB are live, so the percent is above
	// Go's 100).
	prom.waitFor(t, `count(go_gc_gogc_percent{job=~"authserver|resourceserver"} > 100)`, 4)
	// Each resource server fetched the key set.
	prom.waitFor(t, `count(partnerapi_jwks_fetches_total{result="success"} >= 1)`, 2)
	// The shipped alert rules load and evaluate, and none fires.
	prom.checkRules(t)
	// Every series the dashboard and the alert rules read exists.
	for _, name := range shippedMetricNames(t) {
		if n := prom.value(t, `count({__name__="`+name+`"})`); n == 0 {
			t.Errorf("the dashboard or an alert reads %s, which no server exports", name)
		}
	}
}

// shippedMetricNames are the metric names the Grafana dashboard and the
// alert rules query.
func shippedMetricNames(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	var text []byte
	for _, f := range []string{"deploy/grafana/dashboards/partner-api.json", "deploy/prometheus/alerts.yml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	seen := map[string]bool{}
	var names []string
	for _, m := range metricNameRE.FindAllString(string(text), -1) {
		if !seen[m] {
			seen[m] = true
			names = append(names, m)
		}
	}
	if len(names) < 8 {
		t.Fatalf("only %d metric names found in the dashboard and the alerts: %v", len(names), names)
	}
	return names
}

var metricNameRE = regexp.MustCompile(`\b(?:partnerapi_[a-z_]+|process_resident_memory_bytes)\b`)

// get sends a GET with the partner's client.
func (top *topology) get(t *testing.T, u string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return top.do(t, req)
}

// prometheus is a running Prometheus server.
type prometheus struct {
	*process
	base string
}

// startPrometheus runs prometheus scraping every replica of both pools each
// second, with the shipped alert rules, and waits until it is ready.
func startPrometheus(t *testing.T, top *topology) *prometheus {
	t.Helper()
	dir := filepath.Join(top.home, "prometheus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	targets := func(servers []*server) string {
		var out []string
		for _, s := range servers {
			out = append(out, strconv.Quote(s.metrics))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	rules := filepath.Join(repoRoot(t), "deploy", "prometheus", "alerts.yml")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: authserver
    static_configs: [{targets: %s}]
  - job_name: resourceserver
    static_configs: [{targets: %s}]
`, rules, targets(top.auth), targets(top.resource))
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	p := startProcess(t, "prometheus", baseEnv(dir), "prometheus",
		"--config.file="+file, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	prom := &prometheus{process: p, base: "http://" + addr}
	waitOK(t, prom.base+"/-/ready", p)
	return prom
}

// query runs an instant query and returns its vector's values.
func (p *prometheus) query(t *testing.T, q string) []float64 {
	t.Helper()
	resp, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Status != "success" || res.Data.ResultType != "vector" {
		t.Fatalf("query %s: %d %s (%v)", q, resp.StatusCode, body, err)
	}
	var out []float64
	for _, r := range res.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, r.Value)
		}
		out = append(out, v)
	}
	return out
}

// raw is the JSON answer to q, for failure messages.
func (p *prometheus) raw(t *testing.T, q string) string {
	t.Helper()
	resp, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// value is the one value of q's answer (0 for an empty answer).
func (p *prometheus) value(t *testing.T, q string) float64 {
	t.Helper()
	vs := p.query(t, q)
	switch len(vs) {
	case 0:
		return 0
	case 1:
		return vs[0]
	}
	t.Fatalf("query %s: %d series, want one", q, len(vs))
	return 0
}

// waitFor polls q until its value is want: the next scrapes (every second)
// bring the servers' counts in. It fails after 15 seconds.
func (p *prometheus) waitFor(t *testing.T, q string, want float64) {
	t.Helper()
	testwait.Until(t, 15*time.Second, fmt.Sprintf("Prometheus: %s = %v", q, want), func() error {
		if !p.Running() {
			t.Fatalf("Prometheus stopped while waiting for %s = %v", q, want)
		}
		if got := p.value(t, q); got != want {
			return fmt.Errorf("%s = %v", q, got)
		}
		return nil
	})
}

// checkRules checks that every shipped rule loaded and evaluates without
// error, and that no alert fires on the healthy topology.
func (p *prometheus) checkRules(t *testing.T) {
	t.Helper()
	testwait.Until(t, 15*time.Second, "alert rules: 6 loaded, healthy and inactive", func() error {
		resp, err := http.Get(p.base + "/api/v1/rules")
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Data struct {
				Groups []struct {
					Rules []struct {
						Name   string `json:"name"`
						Health string `json:"health"`
						State  string `json:"state"`
						Error  string `json:"lastError"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		n := 0
		for _, g := range res.Data.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health != "ok" || r.State != "inactive" {
					problems = append(problems, fmt.Sprintf("%s: health %q state %q %s", r.Name, r.Health, r.State, r.Error))
				}
			}
		}
		if n != 6 || len(problems) != 0 {
			return fmt.Errorf("%d loaded (want 6); %v", n, problems)
		}
		return nil
	})
}
