#!/usr/bin/env bash
# down.sh — stop what tests/testbed/up.sh started (by the pids it recorded), nothing else.
# Data (images, Slurm state, the shared dir) stays in place so a later up.sh is fast.
#
#   tests/testbed/down.sh [--dir D]
set -euo pipefail
D="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) D="${2:?--dir needs a path}"; shift 2 ;;
    --dir=*) D="${1#--dir=}"; shift ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "down.sh: unknown argument: $1 (try --help)" >&2; exit 4 ;;
  esac
done
log() { printf 'testbed: %s\n' "$*" >&2; }
# alive PIDFILE NAME, pid_of PIDFILE, daemon_of PIDNAME: see pidfile.sh
. "$(cd "$(dirname "$0")" && pwd)/pidfile.sh"
if [ ! -d "$D/pids" ]; then log "nothing to stop (no $D/pids)"; exit 0; fi

# Stop slurmd before slurmctld, slurmctld before the accounting (slurmdbd, then its MariaDB),
# the registries before the engines that may be pulling from them, and dockerd last
# (containers stop with their engine).
order=()
for f in "$D"/pids/slurmd-*.pid; do [ -e "$f" ] && order+=("$f"); done
for f in "$D"/pids/slurmctld.pid "$D"/pids/slurmdbd.pid "$D"/pids/mariadb.pid "$D"/pids/buildkitd.pid \
         "$D"/pids/registry.pid "$D"/pids/registry-auth.pid \
         "$D"/pids/podman-*.pid "$D"/pids/dockerd-*.pid "$D"/pids/munged.pid; do [ -e "$f" ] && order+=("$f"); done

pids=()
for f in "${order[@]}"; do
  name="$(basename "$f" .pid)"
  # a pid left from before a reboot may be another process's now: stop only our daemon
  if alive "$f" "$(daemon_of "$name")" && pid="$(pid_of "$f")"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
  fi
  rm -f "$f"
done
end=$((SECONDS + 30))
for pid in "${pids[@]}"; do
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $end ]; then log "pid $pid did not stop in 30 s; killing it"; kill -KILL "$pid" 2>/dev/null || true; break; fi
    sleep 0.2
  done
done
rm -f "$D/testbed.env" "$D/podman.env"
log "down"
