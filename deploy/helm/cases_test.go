package helm

// A case of the matrix: values given to helm lint and helm template.
type chartCase struct {
	name   string
	values string
	// What the case must render beyond the two servers.
	hpa, ingress, gateway, trial, monitoring bool
	// The Redis topology the values name.
	topology string
}

// required are the values every install must give: the public base URL,
// the signing keys and Redis. The chart has no default for them.
const required = `
publicBaseURL: https://api.example.com
keys:
  jwks: '{"keys":[]}'
redis:
  url: redis://:s3cret@redis.example.internal:6379/0
tests:
  credentialsSecret: partner-sandbox
`

// cases is the matrix: the defaults, and each feature on.
var cases = []chartCase{
	{name: "defaults", values: required, topology: "node"},
	{name: "autoscaling", hpa: true, topology: "node", values: required + `
authserver:
  autoscaling: {enabled: true}
resourceserver:
  autoscaling: {enabled: true, maxReplicas: 40}
`},
	{name: "sentinel", topology: "sentinel", values: `
publicBaseURL: https://api.example.com
keys: {existingSecret: partnerapi-keys}
redis:
  topology: sentinel
  existingSecret: ""
  url: redis://:s3cret@sentinel-0.redis:26379/0?master_name=partnerapi&addr=sentinel-1.redis:26379&addr=sentinel-2.redis:26379
  networkPeers:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: redis}}
`},
	{name: "cluster", topology: "cluster", values: `
publicBaseURL: https://api.example.com
keys: {existingSecret: partnerapi-keys, secretKey: signing.json}
redis:
  topology: cluster
  existingSecret: partnerapi-redis
  existingSecretKey: url
  keyPrefix: "partnerapi:"
  networkPeers:
    - ipBlock: {cidr: 10.20.0.0/16}
`},
	{name: "ingress", ingress: true, topology: "node", values: required + `
trustedProxies: 10.0.0.0/8
ingress:
  enabled: true
  className: nginx
  hosts: [api.example.com]
  tls:
    - secretName: api-example-com-tls
      hosts: [api.example.com]
networkPolicy:
  publicFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}
`},
	{name: "gateway", gateway: true, topology: "node", values: required + `
gateway:
  enabled: true
  parentRefs:
    - {name: public, namespace: gateway-system, sectionName: https}
  hostnames: [api.example.com]
`},
	{name: "trial", trial: true, topology: "node", values: `
publicBaseURL: http://partnerapi.localtest.me
keys:
  jwks: '{"keys":[]}'
redis:
  trial: {enabled: true}
`},
	{name: "tracing", topology: "node", values: required + `
otel:
  endpoint: http://otel-collector.observability.svc:4317
  protocol: grpc
  samplingRatio: 0.05
  serviceNames: {authserver: partnerapi-token, resourceserver: partnerapi-api}
  resourceAttributes: {deployment.environment.name: prod, k8s.cluster.name: eu-1}
  headersSecret: {name: otel-headers, key: api-key}
  networkPeers:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}
`},
	{name: "monitoring", monitoring: true, topology: "node", values: required + `
monitoring:
  serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}}
  prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack}}
  dashboards: {enabled: true}
`},
}
