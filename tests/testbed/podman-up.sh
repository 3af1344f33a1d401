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
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Removed on every way out (a failed apt-get dies), or no service would start at boot.
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\n# benchctl testbed podman-up.sh: apt-get install starts no daemons\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
  fi
  apt-get update -q >/tmp/benchctl-testbed-podman-apt.log 2>&1 || { tail -20 /tmp/benchctl-testbed-podman-apt.log >&2; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >>/tmp/benchctl-testbed-podman-apt.log 2>&1 \
    || { tail -20 /tmp/benchctl-testbed-podman-apt.log >&2; die "apt-get install ${need[*]} failed"; }
  if [ "$(trap -p EXIT)" != "" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
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
# Root acts in folders root owns; inside the user's own folders it acts as the user (as_user),
# so that a link the user planted there leads root nowhere.
as_user() { runuser -u "$PU" -- "$@"; }
mkdir -p "$P/home" && chown -h "$PU:" "$P/home"
for f in /etc/subuid /etc/subgid; do
  # 65536 ids for the user, out of the way of other users' ranges (up to 100000+65536*k).
  grep -q "^$PU:" "$f" 2>/dev/null || echo "$PU:1200000:65536" >>"$f"
done
# The user's runtime folder, as a login session would make it (0700, the user's).
mkdir -p "/run/user/$uid" && chown -h "$PU:" "/run/user/$uid" && chmod 0700 "/run/user/$uid"

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

# start_engine NAME USER DIR SOCKET CTL: one podman system service with its own storage under
# DIR (the user's, for a rootless engine). Its containers.conf, registries.conf, log and pid
# file are in CTL, a folder root owns: root never writes into a folder of the unprivileged
# user. The engine is known by what it is (podman_serving: a podman of that user serving
# SOCKET), not by a number in a file, so nothing else is ever taken for it or signalled. A
# service that answers is left alone unless its configuration files changed.
start_engine() {
  local name=$1 user=$2 dir=$3 sock=$4 ctl=$5 uid_of pid same=1 f
  uid_of="$(id -u "$user")"
  mkdir -p "$ctl" && chown -h root: "$ctl" && chmod 0755 "$ctl"
  conf >"$ctl/containers.conf.new" && regconf >"$ctl/registries.conf.new"
  for f in containers.conf registries.conf; do
    cmp -s "$ctl/$f.new" "$ctl/$f" || same=0
    chmod 0644 "$ctl/$f.new" && mv -f "$ctl/$f.new" "$ctl/$f"
  done
  if pid="$(podman_serving "$sock" "$uid_of" "$ctl/pid")"; then
    if [ "$same" = 1 ] && answers "$sock" >/dev/null 2>&1; then
      echo "$pid" >"$ctl/pid"; started "podman-$name" "$ctl/pid"; return 0
    fi
    log "podman ($name, pid $pid): configuration changed or no answer: restarting it"
    kill "$pid" 2>/dev/null || true
    wait_for 10 bash -c '! kill -0 "$1"' _ "$pid" || kill -KILL "$pid" 2>/dev/null || true
  fi
  if [ "$user" = root ]; then
    mkdir -p "$dir/run" "$dir/tmp" "$dir/storage" "$(dirname "$sock")"
    rm -f "$sock"
  else
    # DIR is made by root in a folder root owns, then given to the user (only DIR itself:
    # what is inside, storage with files of the user's subordinate ids among it, stays as it
    # is); everything inside it is made by the user.
    mkdir -p "$dir" && chown -h "$user:" "$dir"
    as_user mkdir -p "$dir/run" "$dir/tmp" "$dir/storage" "$dir/xdg" "$(dirname "$sock")" \
      && as_user chmod 0700 "$dir/xdg" && as_user rm -f "$sock" \
      || die "could not prepare $dir as $user (is something in it not the user's?)"
  fi
  log "starting podman ($name)"
  local cmd=(podman --root "$dir/storage" --runroot "$dir/run" --tmpdir "$dir/tmp"
             system service --time=0 "unix://$sock")
  if [ "$user" = root ]; then
    (cd "$dir" && exec env CONTAINERS_CONF="$ctl/containers.conf" CONTAINERS_REGISTRIES_CONF="$ctl/registries.conf" setsid "${cmd[@]}") >"$ctl/log" 2>&1 </dev/null &
  else
    # --root stays in the user's folder; XDG_RUNTIME_DIR of its own keeps each engine's pause
    # process (the user namespace) apart.
    (cd "$dir" && exec setsid runuser -u "$user" -- env HOME="$P/home" XDG_RUNTIME_DIR="$dir/xdg" \
        CONTAINERS_CONF="$ctl/containers.conf" CONTAINERS_REGISTRIES_CONF="$ctl/registries.conf" "${cmd[@]}") >"$ctl/log" 2>&1 </dev/null &
  fi
  wait_for 10 podman_serving "$sock" "$uid_of" || { tail -20 "$ctl/log" >&2; die "podman ($name) did not start"; }
  podman_serving "$sock" "$uid_of" >"$ctl/pid"
  started "podman-$name" "$ctl/pid"
  wait_for 60 answers "$sock" || { tail -20 "$ctl/log" >&2; die "podman ($name) does not answer on $sock"; }
}

rootful=(); rootless=()
for i in $(seq 1 "$NODES"); do
  n="n$i"
  mkdir -p "$P/$n" && chmod 0755 "$P/$n"
  start_engine "$n" root "$P/$n/root" "$P/$n/root/podman.sock" "$P/$n/root"
  rootful+=("unix://$P/$n/root/podman.sock")
  start_engine "$n-rootless" "$PU" "$P/$n/rootless" "$P/$n/rootless/sock/podman.sock" "$P/$n/rootless-ctl"
  rootless+=("unix://$P/$n/rootless/sock/podman.sock")
done
# The user's default rootless socket (what --engine podman finds) is n1's.
as_user mkdir -p "/run/user/$uid/podman"
as_user ln -sfn "$P/n1/rootless/sock/podman.sock" "/run/user/$uid/podman/podman.sock"

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
