#!/usr/bin/env bash
# up.sh — start the benchctl testbed: a Slurm cluster of N nodes (n1..nN) with one Docker
# Engine per node, all on this machine. See ../../../shared/TESTBED.md and tests/testbed/README.md.
#
#   tests/testbed/up.sh [--nodes N] [--dir D] [--demo]
#
# Idempotent: a second run while everything answers is a no-op; after a crash it restarts
# only what is dead. Writes $D/testbed.env, which the end-to-end tests read. --demo starts
# only what `make demo` needs (munge, Slurm with its accounting, a Docker Engine per node:
# no BuildKit, registries, base or MPI images, Podman engines); a later run without it
# starts the rest.
# Exit codes: 0 up, 3 cannot run here (not root, no apt), 1 something failed to start.
set -euo pipefail

NODES=3
D="${BENCHCTL_TESTBED_DIR:-/var/tmp/bctb}"
DEMO=0
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
    --nodes=*) NODES="${1#--nodes=}"; shift ;;
    --dir) D="${2:?--dir needs a path}"; shift 2 ;;
    --dir=*) D="${1#--dir=}"; shift ;;
    --demo) DEMO=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1 (try --help)" >&2; exit 4 ;;
  esac
done
case "$NODES" in ''|*[!0-9]*) echo "up.sh: --nodes must be a positive integer, got '$NODES'" >&2; exit 4 ;; esac
if [ "$NODES" -lt 1 ] || [ "$NODES" -gt 64 ]; then echo "up.sh: --nodes must be 1..64, got $NODES" >&2; exit 4; fi
if [ "${#D}" -gt 40 ]; then echo "up.sh: --dir '$D' is too long (unix socket paths are limited to 107 bytes); use a short path" >&2; exit 4; fi

HERE="$(cd "$(dirname "$0")" && pwd)"
log() { printf 'testbed: %s\n' "$*" >&2; }
die() { printf 'testbed: error: %s\n' "$*" >&2; exit 1; }
cannot() { printf 'testbed: cannot start here: %s\n' "$*" >&2; exit 3; }

[ "$(id -u)" = 0 ] || cannot "needs root (it starts dockerd, slurmctld, slurmd, slurmdbd, mariadbd, docker-registry and munged)"

# ---- packages -------------------------------------------------------------------------
need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v slurmctld >/dev/null && command -v slurmd >/dev/null || need_pkgs+=(slurm-wlm)
command -v munged >/dev/null || need_pkgs+=(munge)
command -v curl >/dev/null || need_pkgs+=(curl)
# Slurm accounting, so that sacct knows jobs that slurmctld has forgotten (MinJobAge).
command -v slurmdbd >/dev/null || need_pkgs+=(slurmdbd)
command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null || need_pkgs+=(mariadb-server)
if [ "$DEMO" = 0 ]; then
  # A base image with a shell for MAD-style models (bash scripts), made here without a registry.
  [ -x /bin/busybox ] || need_pkgs+=(busybox-static)
  [ -x /bin/bash-static ] || need_pkgs+=(bash-static)
  # Container registries (the CNCF distribution registry), and htpasswd for the one with auth.
  command -v docker-registry >/dev/null || need_pkgs+=(docker-registry)
  command -v htpasswd >/dev/null || need_pkgs+=(apache2-utils)
  # MPI on the nodes themselves, for the process runtime (Debian's Open MPI and mpi4py, as
  # the MPI image has them).
  command -v mpirun.openmpi >/dev/null || need_pkgs+=(openmpi-bin)
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null || need_pkgs+=(python3-mpi4py)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || cannot "missing ${need_pkgs[*]} and no apt-get to install them"
  log "installing ${need_pkgs[*]} from Debian (about a minute)"
  # Packages must not start their own daemons (mariadb, slurmdbd, docker-registry): up.sh
  # starts what it needs.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\n# benchctl testbed up.sh: apt-get install starts no daemons\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
  fi
  apt-get update -q >"/tmp/benchctl-testbed-apt.log" 2>&1 || { tail -20 /tmp/benchctl-testbed-apt.log >&2; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}" >>"/tmp/benchctl-testbed-apt.log" 2>&1 \
    || { tail -20 /tmp/benchctl-testbed-apt.log >&2; die "apt-get install ${need_pkgs[*]} failed"; }
  if [ "$(trap -p EXIT)" != "" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
fi

mkdir -p "$D"/{pids,log,shared,slurm/state,slurm/spool}
chmod 0755 "$D"
chmod 1777 "$D/shared"
names=()
for i in $(seq 1 "$NODES"); do names+=("n$i"); done

# started NAME PIDFILE: record that up.sh started the process behind PIDFILE (down.sh reads this)
started() { ln -sf "$2" "$D/pids/$1.pid"; }
# alive PIDFILE NAME, pid_of PIDFILE: see pidfile.sh
. "$HERE/pidfile.sh"
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

# ---- /etc/hosts: node names resolve to this machine ------------------------------------
for n in "${names[@]}"; do
  if ! getent hosts "$n" >/dev/null; then
    echo "127.0.0.1 $n # benchctl-testbed" >>/etc/hosts
  fi
done

# ---- munge ------------------------------------------------------------------------------
if ! (munge -n 2>/dev/null | unmunge >/dev/null 2>&1); then
  if [ ! -s /etc/munge/munge.key ]; then
    log "creating /etc/munge/munge.key"
    if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key
    else dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; fi
    chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  log "starting munged"
  if command -v runuser >/dev/null; then
    runuser -u munge -- munged --force || die "munged failed to start (see /var/log/munge/munged.log)"
  else
    munged --force || die "munged failed to start"
  fi
  started munged /run/munge/munged.pid
  wait_for 10 munge sh -c 'munge -n | unmunge' || die "munge does not answer"
fi

# ---- Docker Engines, one per node ---------------------------------------------------------
sockets=()
for n in "${names[@]}"; do
  nd="$D/$n"; sock="$nd/docker.sock"; sockets+=("unix://$sock")
  mkdir -p "$nd/data" "$nd/exec"
  # Docker 20.10 derives the engine ID from its trust key, by default the shared
  # /etc/docker/key.json: give every node its own key so that every engine has its own ID.
  printf '{"deprecated-key-path": "%s/key.json"}\n' "$nd" >"$nd/daemon.json.new"
  if ! cmp -s "$nd/daemon.json.new" "$nd/daemon.json"; then
    mv "$nd/daemon.json.new" "$nd/daemon.json"
    if alive "$nd/pid" dockerd; then kill "$(cat "$nd/pid")" 2>/dev/null || true; wait_for 20 "dockerd $n exit" sh -c "! kill -0 $(cat "$nd/pid") 2>/dev/null" || true; fi
  else
    rm -f "$nd/daemon.json.new"
  fi
  if alive "$nd/pid" dockerd && curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
    continue
  fi
  if alive "$nd/pid" dockerd; then kill "$(cat "$nd/pid")" 2>/dev/null || true; sleep 1; fi
  rm -f "$sock" "$nd/pid" "$nd/exec/containerd/containerd.pid"
  log "starting dockerd for $n"
  setsid dockerd --data-root "$nd/data" --exec-root "$nd/exec" --pidfile "$nd/pid" \
    --config-file "$nd/daemon.json" -H "unix://$sock" \
    --bridge=none --iptables=false --ip-masq=false --ip6tables=false \
    --label "benchctl.testbed.node=$n" \
    >"$D/log/dockerd-$n.log" 2>&1 </dev/null &
  started "dockerd-$n" "$nd/pid"
done
for n in "${names[@]}"; do
  sock="$D/$n/docker.sock"
  wait_for 60 "dockerd $n" curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping \
    || { tail -20 "$D/log/dockerd-$n.log" >&2; die "dockerd for $n does not answer on $sock"; }
done

# ---- Slurm --------------------------------------------------------------------------------
S="$D/slurm"
host="$(hostname -s)"
cat >"$S/taskprolog.sh.new" <<PROLOG
#!/bin/sh
# Slurm TaskProlog of the benchctl testbed: each task talks to its own node's Docker Engine.
echo "export DOCKER_HOST=unix://$D/\${SLURMD_NODENAME}/docker.sock"
PROLOG
chmod 0755 "$S/taskprolog.sh.new"; mv "$S/taskprolog.sh.new" "$S/taskprolog.sh"

last=$((17000 + NODES))
cat >"$S/slurm.conf.new" <<CONF
# Written by benchctl tests/testbed/up.sh — a $NODES-node test cluster on one machine.
ClusterName=testbed
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
TaskProlog=$S/taskprolog.sh
# Accounting through slurmdbd: sacct answers for jobs that slurmctld has forgotten.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=16819
# Forget ended jobs after 10 s (default 300), so that tests see what sacct says. sbatch --wait
# polls every 8 s at a MinJobAge of 5..16 s (every 32 s above): at 9..16 it sees every exit.
MinJobAge=10
NodeName=n[1-$NODES] NodeHostname=$host NodeAddr=127.0.0.1 Port=[17001-$last] CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$S/slurm.conf"
if ! cmp -s "$S/slurm.conf.new" "$S/slurm.conf"; then
  # The cluster changed shape (or is new): restart the Slurm daemons we run.
  for f in "$S"/slurmd-*.pid "$S/slurmctld.pid"; do
    [ -e "$f" ] || continue
    if alive "$f" "$(daemon_of "$(basename "$f" .pid)")"; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  sleep 1
  rm -f "$S"/slurmd-*.pid "$S/slurmctld.pid" "$D"/pids/slurm*.pid
  rm -rf "$S/state" && mkdir -p "$S/state"
fi
mv "$S/slurm.conf.new" "$S/slurm.conf"

# ---- Slurm accounting: MariaDB and slurmdbd, before slurmctld registers with them ----------
M="$D/mariadb"
mkdir -p "$M"
chown mysql:mysql "$M" && chmod 0750 "$M"
touch "$D/log/mariadb.log" && chown mysql:mysql "$D/log/mariadb.log"
mdb_ping() { mariadb-admin --no-defaults --socket="$M/mysqld.sock" ping; }
if ! (alive "$M/mariadb.pid" mariadbd && mdb_ping >/dev/null 2>&1); then
  if [ ! -d "$M/data/mysql" ]; then
    log "creating the MariaDB data directory"
    mariadb-install-db --no-defaults --user=mysql --datadir="$M/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$D/log/mariadb-install.log" 2>&1 \
      || { tail -20 "$D/log/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
  fi
  if alive "$M/mariadb.pid" mariadbd; then kill "$(cat "$M/mariadb.pid")" 2>/dev/null || true; wait_for 30 "mariadbd exit" sh -c "! kill -0 $(cat "$M/mariadb.pid") 2>/dev/null" || true; fi
  rm -f "$M/mysqld.sock" "$M/mariadb.pid"
  log "starting mariadbd"
  setsid mariadbd --no-defaults --user=mysql --datadir="$M/data" --socket="$M/mysqld.sock" --pid-file="$M/mariadb.pid" \
    --port=16306 --bind-address=127.0.0.1 --skip-name-resolve --log-error="$D/log/mariadb.log" \
    --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 </dev/null >/dev/null 2>&1 &
  started mariadb "$M/mariadb.pid"
  wait_for 60 mariadbd mdb_ping || { tail -20 "$D/log/mariadb.log" >&2; die "mariadbd does not answer on $M/mysqld.sock"; }
fi

# slurmdbd reads slurmdbd.conf beside $SLURM_CONF; it holds the database password: 0600, root's.
pass_file="$M/slurmdbd.pass"
[ -s "$pass_file" ] || (umask 077; head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$pass_file")
db_pass="$(cat "$pass_file")"
(umask 077; cat >"$S/slurmdbd.conf.new" <<CONF)
# Written by benchctl tests/testbed/up.sh — the accounting daemon of the test cluster.
AuthType=auth/munge
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=16819
SlurmUser=root
PidFile=$S/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=16306
StorageUser=slurm
StoragePass=$db_pass
StorageLoc=slurm_acct_db
CONF
chmod 0600 "$S/slurmdbd.conf.new"
if ! cmp -s "$S/slurmdbd.conf.new" "$S/slurmdbd.conf"; then
  if alive "$S/slurmdbd.pid" slurmdbd; then kill "$(cat "$S/slurmdbd.pid")" 2>/dev/null || true; wait_for 20 "slurmdbd exit" sh -c "! kill -0 $(cat "$S/slurmdbd.pid") 2>/dev/null" || true; fi
  mv "$S/slurmdbd.conf.new" "$S/slurmdbd.conf"
else
  rm -f "$S/slurmdbd.conf.new"
fi
if ! alive "$S/slurmdbd.pid" slurmdbd; then
  # The password goes to the client on stdin, never on a command line.
  mariadb --no-defaults --socket="$M/mysqld.sock" -u root <<SQL || die "could not set up the database user of slurmdbd (see $D/log/mariadb.log)"
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$db_pass';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$db_pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
  log "starting slurmdbd"
  slurmdbd || die "slurmdbd failed to start (see $D/log/slurmdbd.log)"
  started slurmdbd "$S/slurmdbd.pid"
fi
wait_for 30 slurmdbd sacctmgr -n list cluster || { tail -20 "$D/log/slurmdbd.log" >&2; die "slurmdbd does not answer"; }
if ! sacctmgr -n -P list cluster format=Cluster | grep -qx testbed; then
  # Adding the cluster also makes the root account and root's association; nothing else is
  # needed to submit, as AccountingStorageEnforce is left at its default (none).
  log "adding cluster testbed to the accounting database"
  sacctmgr -i add cluster testbed >/dev/null || die "sacctmgr add cluster testbed failed"
fi
# slurmctld registers with slurmdbd when it starts. One that runs unregistered (the database
# is new) would keep its jobs out of the accounting: restart it, its jobs stay.
if alive "$S/slurmctld.pid" slurmctld && [ "$(sacctmgr -n -P show cluster where name=testbed format=ControlPort)" != 16817 ]; then
  log "restarting slurmctld: it is not registered with slurmdbd"
  kill "$(cat "$S/slurmctld.pid")" 2>/dev/null || true
  wait_for 30 "slurmctld exit" sh -c "! kill -0 $(cat "$S/slurmctld.pid") 2>/dev/null" || die "slurmctld did not stop"
fi

if ! alive "$S/slurmctld.pid" slurmctld; then
  log "starting slurmctld"
  slurmctld || die "slurmctld failed to start (see $D/log/slurmctld.log)"
  started slurmctld "$S/slurmctld.pid"
fi
wait_for 30 slurmctld scontrol ping || { tail -20 "$D/log/slurmctld.log" >&2; die "slurmctld does not answer"; }
for n in "${names[@]}"; do
  mkdir -p "$S/spool/$n"
  if ! alive "$S/slurmd-$n.pid" slurmd; then
    log "starting slurmd -N $n"
    slurmd -N "$n" || die "slurmd -N $n failed to start (see $D/log/slurmd-$n.log)"
    started "slurmd-$n" "$S/slurmd-$n.pid"
  fi
done

nodes_ready() {
  local bad
  bad="$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 !~ /^(idle|mixed|allocated|completing)$/' || true)"
  if [ -n "$bad" ]; then
    # A node that was down before a restart stays down until resumed.
    echo "$bad" | awk '$2 ~ /down|drain/ {print $1}' | while read -r nn; do
      scontrol update NodeName="$nn" State=RESUME >/dev/null 2>&1 || true
    done
    return 1
  fi
  [ "$(sinfo -h -N -o '%N' | sort -u | wc -l)" -eq "$NODES" ]
}
wait_for 60 "slurm nodes" nodes_ready || { sinfo -N >&2 || true; die "Slurm nodes did not become idle"; }

# ---- the demo's testbed ends here: its env file says so --------------------------------------
sock_list="$(IFS=,; echo "${sockets[*]}")"
name_list="$(IFS=,; echo "${names[*]}")"
# cluster_env HEADER: the env file's lines every testbed has, after the comment HEADER.
cluster_env() {
  cat <<ENV
# benchctl testbed — source this file to use the cluster by hand.$1
export BENCHCTL_TESTBED_DIR=$D
export BENCHCTL_TESTBED_NODES=$NODES
export BENCHCTL_TESTBED_NODE_NAMES=$name_list
export BENCHCTL_TESTBED_SOCKETS=$sock_list
export BENCHCTL_TESTBED_SHARED_DIR=$D/shared
export BENCHCTL_TESTBED_PARTITION=debug
export SLURM_CONF=$S/slurm.conf
ENV
}
if [ "$DEMO" = 1 ]; then
  { cluster_env " Started for the demo
# (up.sh --demo): Slurm and the Docker Engines only; tests/testbed/up.sh starts the rest."
    echo "export BENCHCTL_TESTBED_DEMO=1"; } >"$D/testbed.env.new"
  mv "$D/testbed.env.new" "$D/testbed.env"
  log "up for the demo: $NODES nodes ($name_list), shared dir $D/shared, env file $D/testbed.env"
  exit 0
fi

# ---- buildkitd (the BuildKit builder's tests) ----------------------------------------------
BK="$D/buildkit"
mkdir -p "$BK"
bk_sock="$BK/buildkitd.sock"
if ! (alive "$BK/pid" buildkitd && [ -S "$bk_sock" ]); then
  bk_bin="$("$HERE/buildkitd.sh")" || die "could not build buildkitd (see above)"
  if alive "$BK/pid" buildkitd; then kill "$(cat "$BK/pid")" 2>/dev/null || true; sleep 1; fi
  rm -f "$bk_sock"
  log "starting buildkitd"
  setsid "$bk_bin" --root "$BK/root" --addr "unix://$bk_sock" --oci-worker=true --containerd-worker=false \
    >"$D/log/buildkitd.log" 2>&1 </dev/null &
  echo $! >"$BK/pid"
  started buildkitd "$BK/pid"
  wait_for 60 buildkitd test -S "$bk_sock" || { tail -20 "$D/log/buildkitd.log" >&2; die "buildkitd does not answer on $bk_sock"; }
fi

# ---- container registries ---------------------------------------------------------------
# Two CNCF distribution registries (Debian's docker-registry, 2.8) as plain processes on
# loopback ports: "registry" without auth and "registry-auth" with htpasswd (bcrypt) auth for
# the user benchctl, whose password is generated once into $D/registry-auth/password (0600).
# Engines accept plain HTTP from registries in 127.0.0.0/8 (Docker's default insecure range).
# Each keeps its blobs in $D/<name>/data and appends its log (info level, access log on: one
# line per request) to $D/log/<name>.log, which tests read to count blob fetches.
REG_USER=benchctl
RA="$D/registry-auth"
mkdir -p "$D/registry/data" "$RA/data"
chmod 0700 "$RA"
reg_pass_file="$RA/password"
[ -s "$reg_pass_file" ] || (umask 077; head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$reg_pass_file")
chmod 0600 "$reg_pass_file"
# The htpasswd file (bcrypt) is rewritten only when it does not match the password; the
# password goes to htpasswd on stdin, never on a command line.
if ! htpasswd -v -i "$RA/htpasswd" "$REG_USER" <"$reg_pass_file" >/dev/null 2>&1; then
  log "writing $RA/htpasswd for the user $REG_USER"
  (umask 077; htpasswd -B -i -c "$RA/htpasswd" "$REG_USER" <"$reg_pass_file" >/dev/null 2>&1) \
    || die "htpasswd could not write $RA/htpasswd"
fi
# reg_code ADDR [AUTH]: the HTTP status of GET http://ADDR/v2/ (AUTH=1: with the test user's
# credentials, given to curl on stdin).
reg_code() {
  if [ "${2:-0}" = 1 ]; then
    printf 'user = "%s:%s"\n' "$REG_USER" "$(cat "$reg_pass_file")" \
      | curl -s -o /dev/null -w '%{http_code}' --max-time 2 -A benchctl-testbed-up -K - "http://$1/v2/" 2>/dev/null || true
  else
    curl -s -o /dev/null -w '%{http_code}' --max-time 2 -A benchctl-testbed-up "http://$1/v2/" 2>/dev/null || true
  fi
}
reg_ok() { # reg_ok ADDR AUTH: the registry answers (and, with auth, refuses anonymous requests)
  [ "$(reg_code "$1" "$2")" = 200 ] || return 1
  [ "$2" = 0 ] || [ "$(reg_code "$1" 0)" = 401 ]
}
# port_free ADDR: nothing accepts connections on ADDR (HOST:PORT).
port_free() { ! (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
reg_config() { # reg_config NAME ADDR AUTH: write $D/NAME/config.yml.new
  local dir="$D/$1"
  {
    cat <<CONF
# Written by benchctl tests/testbed/up.sh — the test registry "$1".
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
  fields:
    service: $1
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $2
CONF
    if [ "$3" = 1 ]; then
      cat <<CONF
auth:
  htpasswd:
    realm: benchctl-testbed
    path: $dir/htpasswd
CONF
    fi
  } >"$dir/config.yml.new"
}
# registry NAME PORT AUTH: start the registry NAME unless it answers; sets reg_addr. It listens
# on 127.0.0.1:PORT, or on the next of 127.0.0.2..127.0.0.9 whose PORT is free when another
# process holds that one; the address is kept in $D/NAME/addr, so that it stays the same.
registry() {
  local name=$1 port=$2 auth=$3 dir="$D/$1" a
  reg_addr="$(cat "$dir/addr" 2>/dev/null || true)"
  [ -n "$reg_addr" ] || reg_addr="127.0.0.1:$port"
  reg_config "$name" "$reg_addr" "$auth"
  if ! cmp -s "$dir/config.yml.new" "$dir/config.yml"; then
    mv "$dir/config.yml.new" "$dir/config.yml"
    if alive "$dir/pid" docker-registry; then kill "$(cat "$dir/pid")" 2>/dev/null || true; wait_for 20 "$name exit" sh -c "! kill -0 $(cat "$dir/pid") 2>/dev/null" || true; fi
  else
    rm -f "$dir/config.yml.new"
  fi
  if alive "$dir/pid" docker-registry && reg_ok "$reg_addr" "$auth"; then return 0; fi
  if alive "$dir/pid" docker-registry; then kill "$(cat "$dir/pid")" 2>/dev/null || true; wait_for 20 "$name exit" sh -c "! kill -0 $(cat "$dir/pid") 2>/dev/null" || true; fi
  rm -f "$dir/pid"
  if ! port_free "$reg_addr"; then
    local taken=$reg_addr
    reg_addr=""
    for a in 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8 127.0.0.9; do
      if port_free "$a:$port"; then reg_addr="$a:$port"; break; fi
    done
    [ -n "$reg_addr" ] || die "port $port is taken on 127.0.0.1..127.0.0.9: no address for the registry $name"
    log "$taken is taken by another process: the registry $name moves to $reg_addr"
    reg_config "$name" "$reg_addr" "$auth"
    mv "$dir/config.yml.new" "$dir/config.yml"
  fi
  log "starting the registry $name on $reg_addr"
  printf '%s\n' "$reg_addr" >"$dir/addr"
  setsid docker-registry serve "$dir/config.yml" >>"$D/log/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  started "$name" "$dir/pid"
  wait_for 30 "registry $name" reg_ok "$reg_addr" "$auth" \
    || { tail -20 "$D/log/$name.log" >&2; die "the registry $name does not answer on http://$reg_addr/v2/"; }
}
registry registry 16500 0
registry_addr=$reg_addr
registry registry-auth 16501 1
auth_registry_addr=$reg_addr
log "registries: $registry_addr, $auth_registry_addr (htpasswd, user $REG_USER)"

# ---- a base image with a shell, in every engine ---------------------------------------------
# MAD-style models run `bash scripts/.../run.sh`: the image benchctl-testbed/shell:1 holds
# Debian's static busybox (sh and the usual tools) and static bash, imported into each
# engine from a tar made here (no registry), working in /myworkspace (where madengine mounts
# a MAD checkout). Imported only into an engine that lacks it.
SHELL_IMAGE=benchctl-testbed/shell:2
shell_ok=1
for sock in "${sockets[@]}"; do
  DOCKER_HOST="unix://$sock" docker image inspect "$SHELL_IMAGE" >/dev/null 2>&1 || shell_ok=0
done
if [ "$shell_ok" = 0 ]; then
  # Imported once, then saved and loaded into every engine: an import stamps the time into
  # the image, and the nodes must hold the same image id.
  root="$(mktemp -d)"
  mkdir -p "$root/bin" "$root/usr/bin" "$root/tmp" "$root/etc" "$root/myworkspace"
  cp /bin/busybox "$root/bin/busybox"
  cp /bin/bash-static "$root/bin/bash"
  for app in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
  done
  ln -s ../../bin/bash "$root/usr/bin/bash"
  ln -s ../../bin/env "$root/usr/bin/env"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  first="unix://${sockets[0]}"
  tar -C "$root" -c . | DOCKER_HOST="$first" docker import -c 'ENV PATH=/bin:/usr/bin' -c 'WORKDIR /myworkspace' - "$SHELL_IMAGE" >/dev/null \
    || die "could not import $SHELL_IMAGE into the engine at $first"
  rm -rf "$root"
  DOCKER_HOST="$first" docker save "$SHELL_IMAGE" -o "$D/shell-image.tar" || die "could not save $SHELL_IMAGE"
  for sock in "${sockets[@]:1}"; do
    DOCKER_HOST="unix://$sock" docker load -q -i "$D/shell-image.tar" >/dev/null || die "could not load $SHELL_IMAGE into the engine at $sock"
  done
  rm -f "$D/shell-image.tar" "$D/shell-rootfs.tar"
fi
log "base image with a shell: $SHELL_IMAGE"

# ---- the MPI image: Open MPI, MPICH, mpi4py, hpcc and the test programs, in every engine ------
# Built once per content and cached (mpi-image.sh), saved once and loaded where missing: the
# nodes hold the same image id.
mpi_out="$(DOCKER_HOST="unix://${sockets[0]}" "$HERE/mpi-image.sh")" || die "could not build the MPI image (see above)"
read -r mpi_tar MPI_IMAGE <<<"$mpi_out"
for sock in "${sockets[@]}"; do
  if ! DOCKER_HOST="unix://$sock" docker image inspect "$MPI_IMAGE" >/dev/null 2>&1; then
    DOCKER_HOST="unix://$sock" docker load -q -i "$mpi_tar" >/dev/null || die "could not load $MPI_IMAGE into the engine at $sock"
  fi
done
log "MPI image: $MPI_IMAGE"

# ---- the env file the tests read ---------------------------------------------------------
{ cluster_env ""
  cat <<ENV
export BENCHCTL_TESTBED_BUILDKIT_ADDR=unix://$bk_sock
export BENCHCTL_TESTBED_SHELL_IMAGE=$SHELL_IMAGE
export BENCHCTL_TESTBED_MPI_IMAGE=$MPI_IMAGE
export BENCHCTL_TESTBED_REGISTRY=$registry_addr
export BENCHCTL_TESTBED_REGISTRY_LOG=$D/log/registry.log
export BENCHCTL_TESTBED_AUTH_REGISTRY=$auth_registry_addr
export BENCHCTL_TESTBED_AUTH_REGISTRY_USER=$REG_USER
export BENCHCTL_TESTBED_AUTH_REGISTRY_PASSWORD_FILE=$reg_pass_file
export BENCHCTL_TESTBED_AUTH_REGISTRY_LOG=$D/log/registry-auth.log
ENV
} >"$D/testbed.env.new"
mv "$D/testbed.env.new" "$D/testbed.env"
log "up: $NODES nodes ($name_list), shared dir $D/shared, env file $D/testbed.env"

# ---- Podman: a rootful and a rootless engine per node (podman-up.sh, its own env file) -----
"$HERE/podman-up.sh" --nodes "$NODES" --dir "$D" || die "the Podman engines did not start (see above)"
