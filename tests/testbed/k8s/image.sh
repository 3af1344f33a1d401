#!/usr/bin/env bash
# image.sh ROOTFS NAME:TAG OUT.tar ENTRYPOINT-JSON CMD-JSON — a docker-archive (the format
# `docker save` writes, which `ctr images import` reads) of one layer, made with tar and
# sha256sum alone: no engine, no registry.
set -euo pipefail
ROOTFS="$1" TAG="$2" OUT="$3" EP="${4:-}" CMD="${5:-}"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$ROOTFS" -cf "$T/layer.tar" .
L="$(sha256sum "$T/layer.tar" | cut -d' ' -f1)"
mkdir "$T/$L"; mv "$T/layer.tar" "$T/$L/layer.tar"
printf '%s' "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"1970-01-01T00:00:00Z\",\"config\":{\"Env\":[\"PATH=/usr/local/bin:/bin:/usr/bin:/sbin\"]${EP:+,\"Entrypoint\":$EP}${CMD:+,\"Cmd\":$CMD}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$L\"]},\"history\":[{\"created\":\"1970-01-01T00:00:00Z\",\"created_by\":\"image.sh\"}]}" > "$T/config.json"
C="$(sha256sum "$T/config.json" | cut -d' ' -f1)"; mv "$T/config.json" "$T/$C.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$C" "$TAG" "$L" > "$T/manifest.json"
tar --numeric-owner --owner=0 --group=0 -C "$T" -cf "$OUT.tmp" manifest.json "$C.json" "$L"
mv "$OUT.tmp" "$OUT"
