#!/usr/bin/env bash
# k8s-up.sh — a real Kubernetes cluster on this machine for benchctl's end-to-end tests: a
# control plane (etcd, kube-apiserver, -controller-manager, -scheduler) on the host and N
# nodes, each a kubelet and a containerd in mount, network and UTS namespaces of their own,
# joined by a bridge (10.213.0.0/24); pods on each node's CNI bridge (10.244.<i>.0/24).
# Kubernetes is built from the Go module proxy (k8s/build.sh, once: about 8 minutes cold);
# containerd, runc, the CNI plugins, etcd and busybox come from Debian, unpacked, never
# installed (no service starts); the pause and busybox images are made here. Nothing leaves
# the machine. The verified recipe: ../../../shared/kubernetes/RECIPE.md.
#
#   tests/testbed/k8s-up.sh [--nodes N]      (default 2)
#
# Idempotent: a cluster that answers with its nodes Ready is left as it is; anything else
# is taken down and started again (seconds). Writes $D/k8s.env for the tests.
# Exit codes: 0 up, 3 cannot run here (not root), 1 something failed to start.
set -euo pipefail
NODES=2
D="${BENCHCTL_K8S_DIR:-/var/tmp/bctk}"
KV="${BENCHCTL_K8S_VERSION:-v1.34.4}"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "k8s-up.sh: unknown argument: $1" >&2; exit 4 ;;
  esac
done
case "$NODES" in ''|*[!0-9]*) echo "k8s-up.sh: --nodes must be 1..8" >&2; exit 4 ;; esac
[ "$NODES" -ge 1 ] && [ "$NODES" -le 8 ] || { echo "k8s-up.sh: --nodes must be 1..8" >&2; exit 4; }
HERE="$(cd "$(dirname "$0")" && pwd)"
log() { printf 'testbed: k8s: %s\n' "$*" >&2; }
die() { printf 'testbed: k8s: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { log "cannot start here: needs root"; exit 3; }

BIN="$D/bin"; P="$D/pki"; K="$D/kubeconfig"; PKGROOT="$D/pkgroot"
export PATH="$PKGROOT/usr/bin:$PKGROOT/usr/sbin:$PKGROOT/bin:$PATH"
BR=bctkbr0; NET=10.213.0; HOSTIP=$NET.1; API="https://$HOSTIP:16443"; REG=$HOSTIP:16510; PUSHREG=""
KC=("$BIN/kubectl" --kubeconfig "$K/admin.conf")
mkdir -p "$D/logs" "$D/pids" "$D/images" "$D/results"

# ---- what it needs ----------------------------------------------------------------------
for t in ip iptables unshare nsenter openssl curl; do
  command -v $t >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -q iproute2 iptables util-linux openssl curl >/dev/null 2>&1 || die "cannot install $t"; break; }
done
if [ ! -x "$PKGROOT/usr/bin/containerd" ] || [ ! -x "$PKGROOT/usr/bin/etcd" ]; then
  log "fetching containerd, runc, CNI plugins, etcd and busybox from Debian (unpacked, not installed)"
  rm -rf "$D/debs"; mkdir -p "$D/debs" "$PKGROOT"
  (cd "$D/debs" && apt-get download containerd runc containernetworking-plugins busybox-static etcd-server etcd-client >"$D/logs/apt.log" 2>&1) \
    || { apt-get update -q >/dev/null 2>&1; (cd "$D/debs" && apt-get download containerd runc containernetworking-plugins busybox-static etcd-server etcd-client >"$D/logs/apt.log" 2>&1); } \
    || { tail -5 "$D/logs/apt.log" >&2; die "apt-get download failed"; }
  for f in "$D"/debs/*.deb; do dpkg-deb -x "$f" "$PKGROOT"; done
fi
if [ ! -x "$BIN/kubelet" ] || [ "$(cat "$BIN/VERSION" 2>/dev/null)" != "$KV" ]; then
  log "building Kubernetes $KV from the Go module proxy (once: about 8 minutes on 2 cores)"
  start=$SECONDS
  "$HERE/k8s/build.sh" "$KV" "$BIN" 2>"$D/logs/build.log" || { tail -20 "$D/logs/build.log" >&2; die "building Kubernetes failed"; }
  echo "$KV" > "$BIN/VERSION"
  log "built in $((SECONDS - start)) s"
fi
if [ ! -s "$D/images/pause.tar" ] || [ ! -s "$D/images/busybox.tar" ]; then
  log "making the pause and busybox images"
  rm -rf "$D/images/pause-root" "$D/images/bb-root"
  mkdir -p "$D/images/pause-root" "$D/images/bb-root/bin" "$D/images/bb-root/tmp" "$D/images/bb-root/etc"
  (cd "$HERE/../.." && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$D/images/pause-root/pause" ./tests/testbed/k8s/pause)
  cp "$PKGROOT/bin/busybox" "$D/images/bb-root/bin/busybox"
  for a in $("$D/images/bb-root/bin/busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$D/images/bb-root/bin/$a"; done
  chmod 1777 "$D/images/bb-root/tmp"; echo 'root:x:0:0:root:/:/bin/sh' > "$D/images/bb-root/etc/passwd"; echo 'root:x:0:' > "$D/images/bb-root/etc/group"
  "$HERE/k8s/image.sh" "$D/images/pause-root" bctk.local/pause:1 "$D/images/pause.tar" '["/pause"]' ''
  "$HERE/k8s/image.sh" "$D/images/bb-root" bctk.local/busybox:1 "$D/images/busybox.tar" '' '["sh"]'
fi

# ---- is it up already? -----------------------------------------------------------------
ready() {
  [ -s "$K/admin.conf" ] || return 1
  grep -qF "$REG" "$D/nodes/bctk-node1/containerd.toml" 2>/dev/null || return 1 # a cluster from before the registry
  local i
  for i in $(seq "$NODES"); do
    timeout 10 "${KC[@]}" get node "bctk-node$i" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True || return 1
  done
}
write_env() {
  local socks="" i
  for i in $(seq "$NODES"); do socks="$socks${socks:+,}$D/nodes/bctk-node$i/containerd.sock"; done
  cat > "$D/k8s.env.tmp" <<EOV
export BENCHCTL_K8S_KUBECONFIG=$K/admin.conf
export BENCHCTL_K8S_KUBECTL=$BIN/kubectl
export BENCHCTL_K8S_CTR=$PKGROOT/usr/bin/ctr
export BENCHCTL_K8S_NODE_SOCKETS=$socks
export BENCHCTL_K8S_RESULTS=$D/results
export BENCHCTL_K8S_BUSYBOX=bctk.local/busybox:1
export BENCHCTL_K8S_REGISTRY=$REG
export BENCHCTL_K8S_REGISTRY_PUSH=$PUSHREG
EOV
  mv "$D/k8s.env.tmp" "$D/k8s.env"
}
startd() { local n=$1; shift; nohup setsid "$@" >> "$D/logs/$n.log" 2>&1 < /dev/null & echo $! > "$D/pids/$n"; }
waitfor() { local what=$1 t=$2 i; shift 2; for i in $(seq $((t*10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; die "timed out after ${t}s waiting for $what (logs in $D/logs)"; }

# The registry the kubelets pull from (plain HTTP on the bridge's host address; each node's
# containerd is told so): the tests push images to it as production pushes to its own.
registry_up() {
  local dir="$D/registry" data="$D/registry/data" bctb="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}"
  # With the Docker testbed's plain registry (up.sh), this one serves the same storage: what
  # an engine pushes there (127.0.0.1) the kubelets pull here.
  if [ -f "$bctb/registry/config.yml" ]; then
    data=$(awk '$1 == "rootdirectory:" {print $2; exit}' "$bctb/registry/config.yml")
    PUSHREG=$(cat "$bctb/registry/addr" 2>/dev/null || echo 127.0.0.1:16500)
  fi
  mkdir -p "$dir" "$data"
  cat > "$dir/config.yml.new" <<EOR
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $data}
  delete: {enabled: true}
http:
  addr: $REG
EOR
  if cmp -s "$dir/config.yml.new" "$dir/config.yml" && [ -f "$D/pids/registry" ] && kill -0 "$(cat "$D/pids/registry")" 2>/dev/null \
    && timeout 3 curl -fsS "http://$REG/v2/" >/dev/null 2>&1; then rm -f "$dir/config.yml.new"; return 0; fi
  mv "$dir/config.yml.new" "$dir/config.yml"
  if [ -f "$D/pids/registry" ]; then kill "$(cat "$D/pids/registry")" 2>/dev/null || true; sleep 0.5; rm -f "$D/pids/registry"; fi
  command -v docker-registry >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry >/dev/null 2>&1 \
    || die "cannot install docker-registry"
  startd registry docker-registry serve "$dir/config.yml"
  waitfor "the registry on $REG" 30 curl -fsS "http://$REG/v2/"
}
if ready; then
  registry_up
  write_env
  log "up: $NODES node(s), already running; env file $D/k8s.env"
  exit 0
fi
"$HERE/k8s-down.sh" >/dev/null 2>&1 || true


# ---- PKI and kubeconfigs (openssl; kept across restarts) --------------------------------
mkdir -p "$P" "$K"
(
  cd "$P"
  [ -f ca.crt ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=bctk-ca" 2>/dev/null
  mk() { local n=$1 cn=$2 o=$3 ext=$4; [ -f "$n.crt" ] && return 0
    openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=$cn${o:+/O=$o}" 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" "$ext" > "$n.ext"
    openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$n.crt" -days 3650 -extfile "$n.ext" 2>/dev/null
    rm -f "$n.csr" "$n.ext"; }
  mk apiserver kube-apiserver "" "extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$HOSTIP,IP:10.96.0.1"
  mk admin kubernetes-admin system:masters "extendedKeyUsage=clientAuth"
  mk kcm system:kube-controller-manager "" "extendedKeyUsage=clientAuth"
  mk sched system:kube-scheduler "" "extendedKeyUsage=clientAuth"
  mk apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "extendedKeyUsage=clientAuth"
  [ -f sa.key ] || { openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null; }
  for i in $(seq "$NODES"); do n=bctk-node$i ip=$NET.$((10+i))
    mk "kubelet-client-$n" "system:node:$n" system:nodes "extendedKeyUsage=clientAuth"
    mk "kubelet-serving-$n" "system:node:$n" system:nodes "extendedKeyUsage=serverAuth
subjectAltName=DNS:$n,IP:$ip"
  done
)
kubeconfig() { cat > "$K/$1.conf" <<EOK
apiVersion: v1
kind: Config
clusters: [{name: bctk, cluster: {server: "$API", certificate-authority: $P/ca.crt}}]
users: [{name: $1, user: {client-certificate: $P/$2.crt, client-key: $P/$2.key}}]
contexts: [{name: bctk, context: {cluster: bctk, user: $1}}]
current-context: bctk
EOK
}
kubeconfig admin admin; kubeconfig kcm kcm; kubeconfig sched sched

# ---- control plane ----------------------------------------------------------------------
log "starting the control plane"
ip link show $BR >/dev/null 2>&1 || { ip link add $BR type bridge; ip addr add $HOSTIP/24 dev $BR; ip link set $BR up; }
registry_up
rm -rf "$D/etcd-data"
startd etcd "$PKGROOT/usr/bin/etcd" --name bctk --data-dir "$D/etcd-data" \
  --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
  --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
  --initial-cluster bctk=http://127.0.0.1:12380 --log-level warn --logger zap \
  --experimental-watch-progress-notify-interval=5s
waitfor etcd 30 env ETCDCTL_API=3 "$PKGROOT/usr/bin/etcdctl" --endpoints http://127.0.0.1:12379 endpoint health
startd kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:12379 --bind-address=$HOSTIP --secure-port=16443 \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$P/ca.crt" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range=10.96.0.0/24 --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction --allow-privileged=true --profiling=false \
  --feature-gates=SizeBasedListCostEstimate=false
waitfor kube-apiserver 180 "${KC[@]}" get --raw /readyz
startd kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$K/kcm.conf" --authentication-kubeconfig="$K/kcm.conf" --authorization-kubeconfig="$K/kcm.conf" \
  --bind-address=127.0.0.1 --secure-port=20257 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --service-cluster-ip-range=10.96.0.0/24 \
  --controllers='*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle-controller' --profiling=false
startd kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$K/sched.conf" --authentication-kubeconfig="$K/sched.conf" --authorization-kubeconfig="$K/sched.conf" \
  --bind-address=127.0.0.1 --secure-port=20259 --leader-elect=false --profiling=false

# ---- nodes ------------------------------------------------------------------------------
node() {
  local i=$1 n=bctk-node$1 ip=$NET.$((10+$1)) N="$D/nodes/bctk-node$1" h H t
  rm -rf "$N"; mkdir -p "$N/fakesys" "$N/varlog" "$N/podlogs" "$N/kubelet" "$N/cni/net.d" "$N/cni/ipam" "$N/containerd"
  # The kubelet sets these global sysctls; inside the node's mount namespace it finds them set.
  printf 1 > "$N/fakesys/overcommit_memory"; printf 0 > "$N/fakesys/panic_on_oom"; printf 10 > "$N/fakesys/panic"
  printf 1 > "$N/fakesys/panic_on_oops"; printf 1000000 > "$N/fakesys/root_maxkeys"; printf 25000000 > "$N/fakesys/root_maxbytes"
  for h in /sys/fs/cgroup/*/; do h=${h%/}; mkdir -p "$h/$n"
    [ -f "$h/cpuset.cpus" ] && { cat "$h/cpuset.cpus" > "$h/$n/cpuset.cpus"; cat "$h/cpuset.mems" > "$h/$n/cpuset.mems"; }; done
  startd "ns-$n" unshare --mount --net --uts --propagation private bash -c "
    set -e; hostname $n
    for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops; do mount --bind $N/fakesys/\${f#*/} /proc/sys/\$f; done
    mount --bind $N/fakesys/root_maxkeys /proc/sys/kernel/keys/root_maxkeys
    mount --bind $N/fakesys/root_maxbytes /proc/sys/kernel/keys/root_maxbytes
    mount -t tmpfs -o mode=755 tmpfs /run; mount -t tmpfs -o mode=755 tmpfs /var/lib; mount --bind $N/varlog /var/log
    exec sleep infinity"
  H=$(cat "$D/pids/ns-$n"); waitfor "the namespaces of $n" 10 grep -qx sleep "/proc/$H/comm"
  ip link add "bctkn$i" type veth peer name eth0 netns "$H"
  ip link set "bctkn$i" master $BR up
  nsenter -t "$H" -m -n -- sh -c "ip link set lo up; ip addr add $ip/24 dev eth0; ip link set eth0 up
    ip route add 10.244.0.0/16 via $HOSTIP; ip route add 10.96.0.0/24 via $HOSTIP; sysctl -qw net.ipv4.ip_forward=1
    iptables -t nat -A OUTPUT -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination $HOSTIP:16443
    iptables -t nat -A PREROUTING -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination $HOSTIP:16443"
  ip route replace "10.244.$i.0/24" via "$ip"
  cat > "$N/cni/net.d/10-pods.conflist" <<EOC
{"cniVersion": "0.4.0", "name": "pods", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$N/cni/ipam", "ranges": [[{"subnet": "10.244.$i.0/24"}]],
            "routes": [{"dst": "10.244.0.0/16"}, {"dst": "10.96.0.0/24"}, {"dst": "$NET.0/24"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}, "snat": false}]}
EOC
  cat > "$N/containerd.toml" <<EOC
version = 2
root = "$N/containerd/root"
state = "$N/containerd/state"
[grpc]
  address = "$N/containerd.sock"
[ttrpc]
  address = "$N/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$N/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "bctk.local/pause:1"
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$PKGROOT/usr/lib/cni"
    conf_dir = "$N/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REG"]
    endpoint = ["http://$REG"]
EOC
  startd "containerd-$n" nsenter -t "$H" -m -n -u -- "$PKGROOT/usr/bin/containerd" --config "$N/containerd.toml"
  waitfor "containerd of $n" 30 timeout 2 ctr -a "$N/containerd.sock" version
  for t in "$D"/images/*.tar; do timeout 120 ctr -a "$N/containerd.sock" -n k8s.io images import "$t" >/dev/null || die "importing $t into $n"; done
  kubeconfig "kubelet-$n" "kubelet-client-$n"
  cat > "$N/kubelet.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $P/ca.crt}}
authorization: {mode: Webhook}
readOnlyPort: 0
tlsCertFile: $P/kubelet-serving-$n.crt
tlsPrivateKeyFile: $P/kubelet-serving-$n.key
containerRuntimeEndpoint: unix://$N/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$n
failCgroupV1: false
protectKernelDefaults: true
oomScoreAdj: 0
podLogsDir: $N/podlogs
clusterDomain: cluster.local
resolvConf: ""
maxPods: 50
serializeImagePulls: false
evictionHard: {memory.available: "200Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOC
  startd "kubelet-$n" nsenter -t "$H" -m -n -u -- "$BIN/kubelet" --config="$N/kubelet.yaml" \
    --kubeconfig="$K/kubelet-$n.conf" --root-dir="$N/kubelet" --cert-dir="$N/kubelet/pki" \
    --hostname-override="$n" --node-ip="$ip" --v=1
}
for i in $(seq "$NODES"); do node "$i"; done
for i in $(seq "$NODES"); do
  waitfor "node bctk-node$i Ready" 180 sh -c "'$BIN/kubectl' --kubeconfig '$K/admin.conf' get node bctk-node$i -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
done
waitfor "the default service account" 60 "${KC[@]}" get serviceaccount default
write_env
log "up: $NODES node(s) Ready ($("${KC[@]}" version -o json 2>/dev/null | grep -m1 gitVersion | tr -d ' ",' | cut -d: -f2)); env file $D/k8s.env"
