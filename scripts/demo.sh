#!/usr/bin/env bash
# demo.sh — what `make demo` runs after building benchctl and the examples: the main job as a
# user runs it. On a Slurm cluster (the project's testbed: 3 nodes, one Docker Engine each),
# `build` on the "login node", then `submit --nodes 3 --wait --collect` of the allreduce
# example, which prints the collected table; then where the report is, and the commands it
# ran, to repeat by hand.
#
# Which cluster: a running testbed (its testbed.env under BENCHCTL_TESTBED_DIR, default
# /var/tmp/bctb, and sinfo answering) is reused as it is; else, as root, `tests/testbed/up.sh
# --demo` starts what the demo needs and nothing more: Slurm and a Docker Engine per node (it
# installs docker.io and Slurm on a fresh Debian machine). Where no Slurm can be started (not
# root, no testbed) but a Docker Engine answers at DOCKER_HOST, the demo runs cpubench as a
# one-node job on that engine instead. Each step says how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/bin/benchctl"
TB_DIR="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}"
ran=()

# took START: the seconds since START (date +%s%N), for a person.
took() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN { d = (e - s) / 1e9; printf (d < 10 ? "%.2f s" : "%.1f s"), d }'; }
# timed WHAT COMMAND...: runs the command, then says how long WHAT took (also when it fails).
timed() {
  local what="$1" start rc=0
  shift
  start="$(date +%s%N)"
  "$@" || rc=$?
  echo "demo: $what: $(took "$start")" >&2
  return "$rc"
}
demo_start="$(date +%s%N)"

timed "built benchctl and the examples (make build examples)" make --no-print-directory build examples

# show prints a command as the user would type it, runs it, and remembers it.
show() {
  local line="benchctl"
  local a
  for a in "$@"; do line+=" $(printf '%q' "$a")"; done
  echo "\$ $line" >&2
  ran+=("$line")
  "$BIN" "$@"
}

# trusted says whether path is owned by this user or root and writable by nobody else: the
# testbed's env file is sourced (run as code), so one a stranger planted must not be.
trusted() {
  local owner mode
  read -r owner mode < <(stat -c '%u %a' "$1") || return 1
  { [ "$owner" = "$(id -u)" ] || [ "$owner" = 0 ]; } && [ $((8#$mode & 8#022)) = 0 ]
}

testbed_answers() {
  [ -f "$TB_DIR/testbed.env" ] && [ ! -L "$TB_DIR/testbed.env" ] || return 1
  if ! trusted "$TB_DIR" || ! trusted "$TB_DIR/testbed.env"; then
    echo "demo: $TB_DIR/testbed.env is not this user's or root's alone (owner, or writable by others): not used" >&2
    return 1
  fi
  # shellcheck disable=SC1091
  . "$TB_DIR/testbed.env"
  command -v sinfo >/dev/null && SLURM_CONF="$SLURM_CONF" timeout 10 sinfo -h >/dev/null 2>&1
}

slurm=no
if testbed_answers; then
  slurm=yes
elif [ "$(id -u)" = 0 ] && [ -x tests/testbed/up.sh ]; then
  echo "demo: no testbed answers; starting one (tests/testbed/up.sh --demo: Slurm and a Docker Engine per node)" >&2
  timed "started the testbed" tests/testbed/up.sh --demo --dir "$TB_DIR"
  testbed_answers || { echo "demo: the testbed did not come up; see $TB_DIR/log" >&2; exit 1; }
  slurm=yes
fi

if [ "$slurm" = yes ]; then
  export SLURM_CONF
  # The "login node" talks to n1's engine; each Slurm task gets its own node's (TaskProlog).
  export DOCKER_HOST="${BENCHCTL_TESTBED_SOCKETS%%,*}"
  export BENCHCTL_SHARED_DIR="${BENCHCTL_SHARED_DIR:-$BENCHCTL_TESTBED_SHARED_DIR/demo}"
  nodes="${BENCHCTL_TESTBED_NODES:-3}"
  echo "demo: the testbed's Slurm cluster ($nodes nodes, partition $BENCHCTL_TESTBED_PARTITION); shared directory $BENCHCTL_SHARED_DIR" >&2
  timed "built the image (benchctl build)" show build --manifest models/allreduce/benchmark.yaml
  echo
  out="$(mktemp)"
  trap 'rm -f "$out"' EXIT
  code=0
  timed "ran the job on $nodes nodes and collected it (benchctl submit --wait --collect)" \
    show submit --manifest models/allreduce/benchmark.yaml --nodes "$nodes" --wait --collect >"$out" || code=$?
  cat "$out"
  job="$(head -n 1 "$out")"
  echo
  show jobs --limit 1 || { rc=$?; [ "$code" != 0 ] || code=$rc; }
  echo
  echo "demo: done in $(took "$demo_start")" >&2
  echo "the report: $BENCHCTL_SHARED_DIR/jobs/$job/report.html (perf.csv and summary.json beside it)"
  echo "to repeat by hand (source $TB_DIR/testbed.env first, as this demo did):"
  echo "  export BENCHCTL_SHARED_DIR=$(printf '%q' "$BENCHCTL_SHARED_DIR") DOCKER_HOST=$(printf '%q' "$DOCKER_HOST")"
  for c in "${ran[@]}"; do echo "  $c"; done
  exit "$code"
fi

# No Slurm: a one-node job on the local engine.
if ! "$BIN" version --output json 2>/dev/null | grep -q '"engine"'; then
  echo "demo: no Slurm testbed, and no Docker Engine answers at ${DOCKER_HOST:-the default socket}." >&2
  echo "demo: start Docker (or run 'make demo' as root, which starts the testbed) and try again." >&2
  exit 1
fi
export BENCHCTL_SHARED_DIR="${BENCHCTL_SHARED_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchctl}"
export BENCHCTL_JOB_ID="demo-$(date +%Y%m%d-%H%M%S)"
echo "demo: no Slurm here; running cpubench as a one-node job on the engine at ${DOCKER_HOST:-the default socket}" >&2
timed "ran cpubench (benchctl run)" show run --manifest models/cpubench/benchmark.yaml
echo
timed "collected the job (benchctl collect)" show collect "$BENCHCTL_JOB_ID"
echo
echo "demo: done in $(took "$demo_start")" >&2
echo "the report: $BENCHCTL_SHARED_DIR/jobs/$BENCHCTL_JOB_ID/report.html (perf.csv and summary.json beside it)"
echo "to repeat by hand:"
echo "  export BENCHCTL_SHARED_DIR=$(printf '%q' "$BENCHCTL_SHARED_DIR") BENCHCTL_JOB_ID=$(printf '%q' "$BENCHCTL_JOB_ID")"
for c in "${ran[@]}"; do echo "  $c"; done
