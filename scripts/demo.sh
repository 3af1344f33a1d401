#!/usr/bin/env bash
# demo.sh — what `make demo` runs after building: validate every example manifest, then run
# the cpubench example for real as a one-node job on a local Docker Engine and print its
# results. Uses the engine at DOCKER_HOST (or the default socket) when it answers; otherwise
# (as root) starts the testbed's engines (tests/testbed/up.sh, which installs docker.io).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/benchctl
for ex in dummy cpubench allreduce; do
  "$BIN" validate --manifest "models/$ex/benchmark.yaml" >/dev/null
  echo "models/$ex/benchmark.yaml: valid"
done
"$BIN" models list --catalog models/models.json
echo

if ! "$BIN" version --output json 2>/dev/null | grep -q '"engine"'; then
  if [ "$(id -u)" != 0 ]; then
    echo "demo: no Docker Engine answers at ${DOCKER_HOST:-the default socket}, and starting one needs root." >&2
    echo "demo: start Docker (or run 'make demo' as root) and try again." >&2
    exit 1
  fi
  echo "demo: no Docker Engine answers; starting the testbed's (tests/testbed/up.sh)" >&2
  tests/testbed/up.sh
  # shellcheck disable=SC1091
  . "${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}/testbed.env"
  export DOCKER_HOST="${BENCHCTL_TESTBED_SOCKETS%%,*}"
  SHARED="${BENCHCTL_SHARED_DIR:-$BENCHCTL_TESTBED_SHARED_DIR/demo}"
else
  SHARED="${BENCHCTL_SHARED_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchctl}"
fi
export BENCHCTL_JOB_ID="demo-$(date +%Y%m%d-%H%M%S)"
echo "demo: running cpubench on the engine at ${DOCKER_HOST:-the default socket}; shared dir $SHARED" >&2
"$BIN" run --manifest models/cpubench/benchmark.yaml --shared-dir "$SHARED"
echo
"$BIN" collect "$BENCHCTL_JOB_ID" --shared-dir "$SHARED" -o table
echo "perf.csv, summary.json and report.html: $SHARED/jobs/$BENCHCTL_JOB_ID/" >&2
