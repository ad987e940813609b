// Package helm holds the offline checks of the Kubernetes chart in
// deploy/helm/partnerapi; it has tests only. Helm itself is not a
// dependency of this module: it is built from deploy/helm/tool, a module of
// its own that pins it (build-helm.sh), into the user's cache, and run as a
// binary.
//
// The tests lint the chart (helm lint --strict) and render it (helm
// template) over a matrix of values; decode every rendered object strictly
// into its Kubernetes API type (k8s.io/api, Gateway API, the Prometheus
// Operator's), so that an unknown or misplaced field fails; check that a
// wrong value fails the schema; send every path through the real Caddy with
// deploy/Caddyfile and check the chart's Ingress and HTTPRoute route it to
// the same server; and start the real binaries as the rendered containers
// say (command, arguments, environment, Secrets and ports) against a real
// Redis, asking the rendered probes on the rendered ports, running the
// helm test pod's script and timing the drain on SIGTERM. What this cannot
// check without a cluster is in deploy/docs/kubernetes.md.
package helm
