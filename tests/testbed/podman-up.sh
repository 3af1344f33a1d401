#!/usr/bin/env bash
# podman-up.sh — start the testbed's Podman engines, one rootful and one rootless per node,
# beside the Docker Engines of up.sh (which calls this at its end). See README.md.
#
#   tests/testbed/podman-up.sh [--nodes N] [--dir D]
#
# Idempotent: a service that answers is left alone. Writes $D/podman.env (read with
# testbed.env by the end-to-end tests). Exit codes: 0 up, 3 cannot run here (not root, no
# apt), 1 something failed to start.
set -euo pipefail

NODES=3
D="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
    --nodes=*) NODES="${1#--nodes=}"; shift ;;
    --dir) D="${2:?--dir needs a path}"; shift 2 ;;
    --dir=*) D="${1#--dir=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "podman-up.sh: unknown argument: $1 (try --help)" >&2; exit 4 ;;
  esac
done
case "$NODES" in ''|*[!0-9]*) echo "podman-up.sh: --nodes must be a positive integer, got '$NODES'" >&2; exit 4 ;; esac
HERE="$(cd "$(dirname "$0")" && pwd)"
log() { printf 'testbed: %s\n' "$*" >&2; }
die() { printf 'testbed: error: %s\n' "$*" >&2; exit 1; }
cannot() { printf 'testbed: cannot start here: %s\n' "$*" >&2; exit 3; }
[ "$(id -u)" = 0 ] || cannot "needs root (it installs Podman and starts its services)"
. "$HERE/pidfile.sh"
started() { mkdir -p "$D/pids"; ln -sf "$2" "$D/pids/$1.pid"; }
wait_for() { # wait_for SECONDS COMMAND...
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.2; done
}
answers() { curl -sf --max-time 2 --unix-socket "$1" http://d/_ping; }

# ---- packages (Debian 12: podman 4.3) ------------------------------------------------------
need=()
command -v podman >/dev/null || need+=(podman)
command -v newuidmap >/dev/null || need+=(uidmap)
command -v slirp4netns >/dev/null || need+=(slirp4netns)
command -v fuse-overlayfs >/dev/null || need+=(fuse-overlayfs)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || cannot "missing ${need[*]} and no apt-get to install them"
  log "installing ${need[*]} from Debian (about a minute)"
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# benchctl testbed podman-up.sh: apt-get install starts no daemons\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d; made_policy=1
  fi
  apt-get update -q >/tmp/benchctl-testbed-podman-apt.log 2>&1 || { tail -20 /tmp/benchctl-testbed-podman-apt.log >&2; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >>/tmp/benchctl-testbed-podman-apt.log 2>&1 \
    || { tail -20 /tmp/benchctl-testbed-podman-apt.log >&2; die "apt-get install ${need[*]} failed"; }
  [ "$made_policy" = 0 ] || rm -f /usr/sbin/policy-rc.d
fi

# ---- the unprivileged test user of the rootless engines -------------------------------------
PU=bctbpm
P="$D/podman"
mkdir -p "$P" && chmod 0755 "$P"
if ! id "$PU" >/dev/null 2>&1; then
  log "creating the user $PU (rootless Podman)"
  useradd --system --user-group --home-dir "$P/home" --create-home --shell /usr/sbin/nologin "$PU"
fi
uid="$(id -u "$PU")"
mkdir -p "$P/home" && chown "$PU:" "$P/home"
for f in /etc/subuid /etc/subgid; do
  # 65536 ids for the user, out of the way of other users' ranges (up to 100000+65536*k).
  grep -q "^$PU:" "$f" 2>/dev/null || echo "$PU:1200000:65536" >>"$f"
done
# The user's runtime folder, as a login session would make it (0700, the user's).
mkdir -p "/run/user/$uid" && chown "$PU:" "/run/user/$uid" && chmod 0700 "/run/user/$uid"

# POSIX message queues at /dev/mqueue, as systemd mounts them on every host: a rootless
# engine gives a container the host's IPC (ipc: host) by bind-mounting that folder.
if ! grep -q ' /dev/mqueue mqueue ' /proc/mounts; then
  mkdir -p /dev/mqueue && mount -t mqueue mqueue /dev/mqueue || die "could not mount /dev/mqueue"
fi

# containers.conf of every engine here: no systemd (cgroupfs, events to a file), and file
# locks in the engine's own tmp folder (the default shared-memory lock is one per user, which
# several engines of one user would share).
conf() {
  cat <<CONF
# Written by benchctl tests/testbed/podman-up.sh
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
lock_type = "file"
CONF
}

# registries.conf of every engine here: the testbed's registries (up.sh's, plain HTTP on
# 127.0.0.0/8) marked insecure. Docker takes plain HTTP from 127.0.0.0/8 without being told;
# Podman from no registry that registries.conf does not mark insecure.
regconf() {
  echo "# Written by benchctl tests/testbed/podman-up.sh"
  local r a
  for r in registry registry-auth; do
    a=$(cat "$D/$r/addr" 2>/dev/null) || continue
    printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$a"
  done
}

# start_engine NAME USER DIR SOCKET: one podman system service with its own storage under DIR.
# A service that answers is left alone unless its configuration files changed.
start_engine() {
  local name=$1 user=$2 dir=$3 sock=$4 same=1
  mkdir -p "$dir"
  conf >"$dir/containers.conf.new"; regconf >"$dir/registries.conf.new"
  for f in containers.conf registries.conf; do
    cmp -s "$dir/$f.new" "$dir/$f" || same=0
    mv -f "$dir/$f.new" "$dir/$f"
  done
  if [ "$same" = 1 ] && alive "$dir/pid" podman && answers "$sock" >/dev/null 2>&1; then return 0; fi
  if alive "$dir/pid" podman; then kill "$(cat "$dir/pid")" 2>/dev/null || true; sleep 1; fi
  mkdir -p "$dir/run" "$dir/tmp" "$dir/storage" "$dir/xdg" "$(dirname "$sock")"
  rm -f "$sock"
  if [ "$user" != root ]; then chown -R "$user:" "$dir" "$(dirname "$sock")"; chmod 0700 "$dir/xdg"; fi
  log "starting podman ($name)"
  local cmd=(podman --root "$dir/storage" --runroot "$dir/run" --tmpdir "$dir/tmp"
             system service --time=0 "unix://$sock")
  # exec all the way down: $! is the pid of podman (root) or of runuser (a user's engine).
  if [ "$user" = root ]; then
    (cd "$dir" && exec env CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_REGISTRIES_CONF="$dir/registries.conf" setsid "${cmd[@]}") >"$dir/log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
  else
    # --root stays in the user's folder; XDG_RUNTIME_DIR of its own keeps each engine's pause
    # process (the user namespace) apart.
    (cd "$dir" && exec setsid runuser -u "$user" -- env HOME="$P/home" XDG_RUNTIME_DIR="$dir/xdg" \
        CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_REGISTRIES_CONF="$dir/registries.conf" "${cmd[@]}") >"$dir/log" 2>&1 </dev/null &
    local rpid=$!
    # runuser waits for its child, podman: record that pid.
    wait_for 10 pgrep -P "$rpid" -x podman || true
    pgrep -P "$rpid" -x podman >"$dir/pid" 2>/dev/null || echo "$rpid" >"$dir/pid"
  fi
  started "podman-$name" "$dir/pid"
  wait_for 60 answers "$sock" || { tail -20 "$dir/log" >&2; die "podman ($name) does not answer on $sock"; }
}

rootful=(); rootless=()
for i in $(seq 1 "$NODES"); do
  n="n$i"
  start_engine "$n" root "$P/$n/root" "$P/$n/root/podman.sock"
  rootful+=("unix://$P/$n/root/podman.sock")
  start_engine "$n-rootless" "$PU" "$P/$n/rootless" "$P/$n/rootless/sock/podman.sock"
  rootless+=("unix://$P/$n/rootless/sock/podman.sock")
done
# The user's default rootless socket (what --engine podman finds) is n1's.
mkdir -p "/run/user/$uid/podman" && chown "$PU:" "/run/user/$uid/podman"
ln -sfn "$P/n1/rootless/sock/podman.sock" "/run/user/$uid/podman/podman.sock"

# The shell image in every Podman engine (from n1's Docker Engine), for MAD-style tests.
SHELL_IMAGE="$(sed -n 's/^export BENCHCTL_TESTBED_SHELL_IMAGE=//p' "$D/testbed.env" 2>/dev/null || true)"
if [ -n "$SHELL_IMAGE" ]; then
  for sock in "${rootful[@]}" "${rootless[@]}"; do
    if ! curl -sf --unix-socket "${sock#unix://}" "http://d/images/$SHELL_IMAGE/json" >/dev/null 2>&1; then
      [ -s "$P/shell-image.tar" ] || DOCKER_HOST="unix://$D/n1/docker.sock" docker save "$SHELL_IMAGE" -o "$P/shell-image.tar" \
        || die "could not save $SHELL_IMAGE from n1's Docker Engine"
      curl -sf --unix-socket "${sock#unix://}" -X POST -H 'Content-Type: application/x-tar' --data-binary @"$P/shell-image.tar" \
        "http://d/images/load?quiet=1" >/dev/null || die "could not load $SHELL_IMAGE into the Podman engine at $sock"
    fi
  done
  rm -f "$P/shell-image.tar"
fi

cat >"$D/podman.env.new" <<ENV
# benchctl testbed: the Podman engines (tests/testbed/podman-up.sh), one rootful and one
# rootless per node, in node order.
export BENCHCTL_TESTBED_PODMAN_SOCKETS=$(IFS=,; echo "${rootful[*]}")
export BENCHCTL_TESTBED_PODMAN_ROOTLESS_SOCKETS=$(IFS=,; echo "${rootless[*]}")
export BENCHCTL_TESTBED_PODMAN_USER=$PU
ENV
mv "$D/podman.env.new" "$D/podman.env"
log "podman: rootful and rootless (user $PU) engines for $NODES nodes, env file $D/podman.env"
