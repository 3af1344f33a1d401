#!/usr/bin/env bash
# run-e2e.sh — bring the testbed up (installing what it needs) and run the end-to-end tests.
# Without root or apt the tests are skipped LOUDLY; with CI=true that is a failure instead.
set -uo pipefail
cd "$(dirname "$0")/.."

skip() {
  local why="$1"
  if [ "${CI:-}" = "true" ]; then
    echo "e2e: FAILED: the end-to-end tests cannot run: $why (CI=true forbids skipping them)" >&2
    exit 1
  fi
  printf '\n%s\n' "################################################################################" >&2
  echo "## e2e: SKIPPED the end-to-end tests: $why" >&2
  echo "## Run 'make test' as root on a Debian machine with apt to run them." >&2
  printf '%s\n\n' "################################################################################" >&2
  exit 0
}

[ "$(id -u)" = 0 ] || skip "not root (the testbed starts dockerd, slurmd and munged)"
tests/testbed/up.sh
rc=$?
case $rc in
  0) ;;
  3) skip "the testbed cannot start on this machine (see above)" ;;
  *) echo "e2e: FAILED: the testbed did not come up (exit $rc)" >&2; exit 1 ;;
esac
# A real Kubernetes cluster (2 kubelets) beside it: built from the Go module proxy once
# (about 8 minutes on 2 cores), seconds to start after.
tests/testbed/k8s-up.sh
rc=$?
case $rc in
  0) ;;
  3) skip "the Kubernetes testbed cannot start on this machine (see above)" ;;
  *) echo "e2e: FAILED: the Kubernetes testbed did not come up (exit $rc)" >&2; exit 1 ;;
esac
export BENCHCTL_K8S_ENV="${BENCHCTL_K8S_DIR:-/var/tmp/bctk}/k8s.env"
# The report test renders report.html in headless Chromium (Debian's package).
tests/setup-chromium.sh >/dev/null || { echo "e2e: FAILED: could not install chromium" >&2; exit 1; }
export BENCHCTL_TESTBED_ENV="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}/testbed.env"
exec go test -count=1 -timeout 30m -v ./tests/...
