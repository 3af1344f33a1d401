#!/usr/bin/env bash
# build.sh VERSION OUTDIR — Kubernetes' server binaries (kube-apiserver, -controller-manager,
# -scheduler, kubelet, kubectl) built from the Go module proxy. `go install` refuses
# k8s.io/kubernetes (its go.mod replaces the staging modules), so a throwaway module requires
# it and replaces each staging module by its published version. About 8 minutes cold on 2
# cores; the Go caches make it seconds after. ../../../shared/kubernetes/RECIPE.md §3.
set -euo pipefail
KV="${1:?version, e.g. v1.34.4}"; OUT="${2:?output folder}"
SV="v0.${KV#v1.}"                         # v1.34.4 -> v0.34.4
W="$(mktemp -d /var/tmp/bctk-build.XXXXXX)"; trap 'rm -rf "$W"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$OUT"; cd "$W"
printf 'module k8sbuild\n\ngo 1.24.0\n\ngodebug default=go1.24\n' > go.mod
go mod download -json "k8s.io/kubernetes@$KV" > /dev/null
KMOD="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$KV.mod"
STAGING="$(grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$KMOD" | awk '{print $1}')"
[ -n "$STAGING" ] || { echo "k8s build: no staging modules in $KMOD" >&2; exit 1; }
{ echo "require k8s.io/kubernetes $KV"; echo "replace ("; for m in $STAGING; do echo "  $m v0.0.0 => $m $SV"; done; echo ")"; } >> go.mod
cat > tools.go <<'EOT'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOT
go mod tidy -e >/dev/null 2>&1 || true
MAJ="${KV#v}"; MAJ="${MAJ%%.*}"; MIN="${KV#v*.}"; MIN="${MIN%%.*}"
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=$KV -X $p.gitMajor=$MAJ -X $p.gitMinor=$MIN -X $p.gitTreeState=clean"
done
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  s=$SECONDS
  nice -n 10 go build -trimpath -ldflags "$LD" -o "$OUT/$c.tmp" "k8s.io/kubernetes/cmd/$c"
  mv "$OUT/$c.tmp" "$OUT/$c"
  echo "k8s build: $c in $((SECONDS - s)) s" >&2
done
