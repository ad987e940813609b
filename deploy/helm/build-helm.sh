#!/usr/bin/env bash
# Builds the Helm binary the chart tests run (deploy/helm), at the version
# deploy/helm/tool/go.mod pins, into the user's cache where the tests look
# for it: ${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/helm-VERSION/helm
# (Go's os.UserCacheDir). A binary already there is kept. Prints its path.
# The first build takes minutes (Helm and the Kubernetes client libraries).
set -euo pipefail
tool="$(cd "$(dirname "${BASH_SOURCE[0]}")/tool" && pwd)"
cd "$tool"
version="$(go list -m -f '{{.Version}}' helm.sh/helm/v3)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/helm-$version/helm"
if [ ! -x "$out" ]; then
	mkdir -p "$(dirname "$out")"
	# Stamped as Helm's own Makefile stamps a release: its version (else
	# it says "v3.22") and the Kubernetes version of its client-go (else
	# helm template and lint assume Kubernetes 1.20).
	k8s="$(go list -m -f '{{.Version}}' k8s.io/client-go)" # v0.37.0: Kubernetes 1.37
	minor="$(echo "$k8s" | cut -d. -f2)"
	pkg=helm.sh/helm/v3
	go build -trimpath -ldflags "-X $pkg/internal/version.version=$version \
		-X $pkg/pkg/lint/rules.k8sVersionMajor=1 -X $pkg/pkg/lint/rules.k8sVersionMinor=$minor \
		-X $pkg/pkg/chartutil.k8sVersionMajor=1 -X $pkg/pkg/chartutil.k8sVersionMinor=$minor" \
		-o "$out.tmp" $pkg/cmd/helm
	mv "$out.tmp" "$out"
fi
echo "$out"
