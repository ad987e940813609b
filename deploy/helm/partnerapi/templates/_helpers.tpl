{{/* Names, labels and the pieces both Deployments share. */}}

{{- define "partnerapi.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of a component's objects: partnerapi.name (dict "root" $ "component" "authserver"). */}}
{{- define "partnerapi.name" -}}
{{- printf "%s-%s" (include "partnerapi.fullname" .root) .component -}}
{{- end -}}

{{- define "partnerapi.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "partnerapi.labels" -}}
{{ include "partnerapi.selectorLabels" . }}
app.kubernetes.io/part-of: partnerapi
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "partnerapi.image" -}}
{{- $img := index .root.Values .component "image" -}}
{{- $tag := $img.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- $repo := $img.repository -}}
{{- if .root.Values.image.registry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .root.Values.image.registry) $repo -}}
{{- end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{/* The Secret and key of the signing keys. */}}
{{- define "partnerapi.keysSecret" -}}
{{- .Values.keys.existingSecret | default (printf "%s-keys" (include "partnerapi.fullname" .)) -}}
{{- end -}}

{{/* The Secret and key of REDIS_URL. */}}
{{- define "partnerapi.redisSecret" -}}
{{- .Values.redis.existingSecret | default (printf "%s-redis" (include "partnerapi.fullname" .)) -}}
{{- end -}}
{{- define "partnerapi.redisSecretKey" -}}
{{- if .Values.redis.existingSecret -}}{{ .Values.redis.existingSecretKey }}{{- else -}}redis-url{{- end -}}
{{- end -}}

{{/* The trial Redis's URL (redis.trial.enabled). */}}
{{- define "partnerapi.trialRedisURL" -}}
{{- printf "redis://%s.%s.svc:6379/0" (include "partnerapi.name" (dict "root" . "component" "redis")) .Release.Namespace -}}
{{- end -}}

{{/* The ports the servers reach Redis on. */}}
{{- define "partnerapi.redisPorts" -}}
{{- if .Values.redis.ports -}}
{{- toJson .Values.redis.ports -}}
{{- else if eq .Values.redis.topology "sentinel" -}}
[26379, 6379]
{{- else -}}
[6379]
{{- end -}}
{{- end -}}

{{/* The token service's JWKS as the resource servers fetch it: through its Service. */}}
{{- define "partnerapi.jwksURL" -}}
{{- printf "http://%s.%s.svc:%d/.well-known/jwks.json" (include "partnerapi.name" (dict "root" . "component" "authserver")) .Release.Namespace (int .Values.authserver.service.port) -}}
{{- end -}}

{{/* The environment both servers share. */}}
{{- define "partnerapi.commonEnv" -}}
- name: ISSUER
  value: {{ .Values.publicBaseURL | quote }}
- name: AUDIENCE
  value: {{ .Values.audience | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: TRUSTED_PROXIES
  value: {{ .Values.trustedProxies | quote }}
- name: DPOP_NONCES
  value: {{ .Values.dpopNonces | quote }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "partnerapi.redisSecret" . }}
      key: {{ include "partnerapi.redisSecretKey" . }}
{{- with .Values.redis.keyPrefix }}
- name: REDIS_KEY_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The probes of a server, on its API port: partnerapi.probes (dict "root" $ "component" "authserver"). */}}
{{- define "partnerapi.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 2
  timeoutSeconds: 1
  failureThreshold: 15
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 2
  successThreshold: 1
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
{{- end -}}

{{- define "partnerapi.topologySpread" -}}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
  - topologyKey: topology.kubernetes.io/zone
    maxSkew: {{ .root.Values.topologySpread.zone.maxSkew }}
    whenUnsatisfiable: {{ .root.Values.topologySpread.zone.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "partnerapi.selectorLabels" . | nindent 8 }}
    matchLabelKeys: [pod-template-hash]
  - topologyKey: kubernetes.io/hostname
    maxSkew: {{ .root.Values.topologySpread.node.maxSkew }}
    whenUnsatisfiable: {{ .root.Values.topologySpread.node.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "partnerapi.selectorLabels" . | nindent 8 }}
    matchLabelKeys: [pod-template-hash]
{{- end }}
{{- end -}}

{{/*
The public routes, declared once for the Ingress and the HTTPRoute: what
deploy/Caddyfile routes. Its `path /api/v1/oauth/* /.well-known/*` takes
those prefixes with their slash; Kubernetes' and Gateway API's prefixes
match whole path elements, so the bare /api/v1/oauth and /.well-known
would go to the token service too: an exact route (which wins over an
equally long prefix in both APIs) keeps them on the resource server, as
the edge does. The chart test (deploy/helm) sends every path through the
real Caddy and checks these routes agree. The admin API is not here.
*/}}
{{- define "partnerapi.routes" -}}
- {path: /api/v1/oauth, exact: false, component: authserver}
- {path: /.well-known, exact: false, component: authserver}
- {path: /api/v1/oauth, exact: true, component: resourceserver}
- {path: /.well-known, exact: true, component: resourceserver}
- {path: /, exact: false, component: resourceserver}
{{- end -}}

{{/* The egress rules both servers share: Redis and the cluster DNS. */}}
{{- define "partnerapi.egressRedisDNS" -}}
- ports:
    {{- range $p := include "partnerapi.redisPorts" . | fromJsonArray }}
    - {protocol: TCP, port: {{ int $p }}}
    {{- end }}
  {{- if .Values.redis.trial.enabled }}
  to:
    - podSelector:
        matchLabels:
          {{- include "partnerapi.selectorLabels" (dict "root" . "component" "redis") | nindent 10 }}
  {{- else if .Values.redis.networkPeers }}
  to:
    {{- toYaml .Values.redis.networkPeers | nindent 4 }}
  {{- end }}
- ports:
    - {protocol: UDP, port: {{ .Values.networkPolicy.dns.port }}}
    - {protocol: TCP, port: {{ .Values.networkPolicy.dns.port }}}
  {{- with .Values.networkPolicy.dns.peers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The OTEL_* environment of a server when otel.endpoint is set: partnerapi.otelEnv (dict "root" $ "component" "authserver"). */}}
{{- define "partnerapi.otelEnv" -}}
{{- $o := .root.Values.otel -}}
{{- if $o.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $o.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $o.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: parentbased_traceidratio
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $o.samplingRatio | toString | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ index $o.serviceNames .component | quote }}
{{- with $o.resourceAttributes }}
{{- $pairs := list }}
{{- range $k, $v := . }}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $pairs | quote }}
{{- end }}
{{- with $o.headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $o.headersSecret.key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The collector's port, from otel.endpoint (else its scheme's). */}}
{{- define "partnerapi.otelPort" -}}
{{- $u := urlParse .Values.otel.endpoint -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $u.host) -}}
{{- if $port -}}{{ $port }}{{- else if eq $u.scheme "https" -}}443{{- else -}}80{{- end -}}
{{- end -}}

{{/* The egress rule both servers share to the OTLP collector, when otel.endpoint is set. */}}
{{- define "partnerapi.egressOtel" -}}
{{- if .Values.otel.endpoint }}
# The OTLP collector (otel.endpoint).
- ports:
    - {protocol: TCP, port: {{ include "partnerapi.otelPort" . }}}
  {{- with .Values.otel.networkPeers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
