# pidfile.sh — sourced by up.sh and down.sh: is the process a pid file names still ours?
#
# A pid file outlives its process: after a reboot, or when the machine's processes were
# stopped without down.sh, its number may belong to some other process by now (pids count up
# from 1 again after a boot). "kill -0 PID" alone would then take a stranger for the daemon:
# up.sh would skip starting it and down.sh would signal the stranger. So ask /proc what the
# process is too.

# pid_of PIDFILE: print the number in PIDFILE; fail when there is none (missing, empty, a
# FIFO or a directory instead of a file, or text that is not a process number).
pid_of() {
  local f=$1 pid
  [ -f "$f" ] && [ -s "$f" ] || return 1
  pid="$(head -c 32 "$f" 2>/dev/null | tr -d '[:space:]')" || return 1
  [[ "$pid" =~ ^[1-9][0-9]{0,9}$ ]] || return 1
  printf '%s\n' "$pid"
}

# alive PIDFILE NAME: the process PIDFILE names runs and is NAME: its command name (the
# kernel's comm, at most 15 bytes) is NAME or begins with NAME- (buildkitd-v0.17 is buildkitd).
alive() {
  local pid comm
  pid="$(pid_of "$1")" || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  comm="$(cat "/proc/$pid/comm" 2>/dev/null)" || return 1
  [ "$comm" = "$2" ] || [[ "$comm" == "$2"-* ]]
}

# daemon_of PIDNAME: the command name of the daemon that up.sh records as $D/pids/PIDNAME.pid.
daemon_of() {
  case "$1" in
    slurmd-*) echo slurmd ;;
    dockerd-*) echo dockerd ;;
    podman-*) echo podman ;;
    mariadb) echo mariadbd ;;
    registry | registry-*) echo docker-registry ;;
    *) echo "$1" ;; # munged, slurmctld, slurmdbd, buildkitd
  esac
}

# serves PID SOCKET UID: PID is a podman process of the user UID whose command line names
# unix://SOCKET: the service of that socket (podman-up.sh's engines). A number in a pid file
# is taken for an engine, and signalled, only when it is.
serves() {
  local pid=$1 sock=$2 uid=$3 comm owner
  [[ "$pid" =~ ^[1-9][0-9]{0,9}$ ]] || return 1
  comm="$(cat "/proc/$pid/comm" 2>/dev/null)" || return 1
  [ "$comm" = podman ] || return 1
  owner="$(stat -c %u "/proc/$pid" 2>/dev/null)" || return 1
  [ "$owner" = "$uid" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "unix://$sock"
}

# podman_serving SOCKET UID [PIDFILE]: print the pid of the podman that serves SOCKET as UID:
# the one PIDFILE names when it does, else the outermost such process (a rootless service
# re-executes itself in its user namespace: the child has the same command line).
podman_serving() {
  local sock=$1 uid=$2 pid ppid
  if [ -n "${3:-}" ] && pid="$(pid_of "$3")" && serves "$pid" "$sock" "$uid"; then
    printf '%s\n' "$pid"; return 0
  fi
  for pid in $(pgrep -x podman 2>/dev/null); do
    serves "$pid" "$sock" "$uid" || continue
    ppid="$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" || continue
    serves "$ppid" "$sock" "$uid" && continue
    printf '%s\n' "$pid"; return 0
  done
  return 1
}
