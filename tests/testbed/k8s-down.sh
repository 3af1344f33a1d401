#!/usr/bin/env bash
# k8s-down.sh — stop the testbed's Kubernetes cluster (k8s-up.sh), every process it started
# by its pid, the pods' processes by their nodes' cgroups, and remove its bridge: the host is
# left as it was. The build, the images and the PKI stay for the next k8s-up.sh.
set -uo pipefail
D="${BENCHCTL_K8S_DIR:-/var/tmp/bctk}"
log() { printf 'testbed: k8s: %s\n' "$*" >&2; }
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
stoppid() { local f="$D/pids/$1" g=${2:-15} i p; [ -f "$f" ] || return 0; p=$(cat "$f")
  if alive "$p"; then kill -TERM "$p" 2>/dev/null
    for i in $(seq $((g*10))); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -KILL "$p" 2>/dev/null
  fi; rm -f "$f"; }
[ -d "$D/pids" ] || exit 0
for f in "$D"/pids/kubelet-*; do [ -e "$f" ] && stoppid "$(basename "$f")" 15; done
for f in "$D"/pids/containerd-*; do [ -e "$f" ] || continue; n=${f##*/containerd-}
  for p in $(find "/sys/fs/cgroup/pids/$n" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  sleep 0.5; stoppid "containerd-$n" 15
  for p in $(grep -l "$D/nodes/$n/containerd.sock" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    [ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null; done
done
for f in "$D"/pids/ns-*; do [ -e "$f" ] && stoppid "$(basename "$f")" 5; done
# The API server waits for its clients before it ends: they are gone now.
stoppid kube-scheduler 15; stoppid kube-controller-manager 15; stoppid kube-apiserver 30; stoppid etcd 15
sleep 0.5
for d in "$D"/nodes/*/; do [ -d "$d" ] || continue; n=$(basename "$d")
  for h in /sys/fs/cgroup/*/; do [ -d "$h$n" ] && find "$h$n" -depth -type d -exec rmdir {} \; 2>/dev/null; done; done
stoppid registry 10
ip link show bctkbr0 >/dev/null 2>&1 && ip link del bctkbr0
for i in $(seq 1 8); do ip route del "10.244.$i.0/24" 2>/dev/null; done
log "down"
