#!/usr/bin/env bash
# buildkitd.sh — make sure a buildkitd binary of the pinned version exists and print its path.
# It is built from the Go module proxy in a throwaway module (buildkit's own go.mod cannot
# be `go install`ed), cached outside the work tree. About 10 minutes on a cold module cache.
set -euo pipefail
VERSION="${BUILDKIT_VERSION:-v0.34.2}"
TOOLS="${BENCHCTL_TOOLS_DIR:-/var/tmp/bctb-tools}"
BIN="$TOOLS/buildkitd-$VERSION"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
mkdir -p "$TOOLS"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "testbed: building buildkitd $VERSION from the Go module proxy (once; cached in $TOOLS)" >&2
(
  cd "$work"
  go mod init buildkitd-build >/dev/null 2>&1
  go get "github.com/moby/buildkit/cmd/buildkitd@$VERSION" >/dev/null 2>&1
  CGO_ENABLED=0 go build -o "$BIN.tmp" github.com/moby/buildkit/cmd/buildkitd
) >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
