#!/usr/bin/env bash
# mpi-image.sh — make sure the testbed's MPI image exists as a saved image tar and print its
# path and name ("TAR NAME"): a Debian 12 root file system (debootstrap, minbase) holding
# Debian's Open MPI 4.1, MPICH 4.0, python3-mpi4py and hpcc, with the test programs of
# tests/fixtures/mpi (pingpong.py, and ring.c built with each MPI's mpicc in a throwaway
# copy that has the compilers). Built once per content (this script and the programs) and
# cached outside the work tree, as buildkitd is: about a minute and a half from Debian's
# mirror; up.sh loads it into every node's engine (one saved image: the same id on each).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$HERE/../fixtures/mpi"
TOOLS="${BENCHCTL_TOOLS_DIR:-/var/tmp/bctb-tools}"
MIRROR="${BENCHCTL_TESTBED_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PKGS="openmpi-bin,libopenmpi3,mpich,python3-mpi4py,hpcc,procps"
DEV_PKGS="gcc libc6-dev libmpich-dev libopenmpi-dev"
log() { echo "testbed: mpi: $*" >&2; }
die() { log "$*"; exit 1; }

key="$(cat "$0" "$SRC/pingpong.py" "$SRC/ring.c" | sha256sum | cut -c1-12)"
NAME="benchctl-testbed/mpi:$key"
TAR="$TOOLS/mpi-image-$key.tar"
if [ -s "$TAR" ]; then echo "$TAR $NAME"; exit 0; fi
[ "$(id -u)" = 0 ] || die "building the MPI image needs root (debootstrap, chroot)"
[ -n "${DOCKER_HOST:-}" ] || die "DOCKER_HOST must name an engine to import the image into"
mkdir -p "$TOOLS"
if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/tmp/benchctl-testbed-debootstrap-apt.log 2>&1 \
    || { tail -20 /tmp/benchctl-testbed-debootstrap-apt.log >&2; die "apt-get install debootstrap failed"; }
fi
work="$(mktemp -d /var/tmp/bctb-mpi-build.XXXXXX)"
cleanup() {
  for m in "$work/dev/proc" "$work/dev/dev"; do mountpoint -q "$m" && umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT
log "building $NAME (once; cached in $TOOLS): debootstrap of $PKGS"
start=$SECONDS
debootstrap --variant=minbase --include="$PKGS" bookworm "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
# The programs are built in a copy that has the compilers; only the binaries reach the image.
cp -a "$work/root" "$work/dev"
mount -t proc proc "$work/dev/proc"
mount --bind /dev "$work/dev/dev"
cp "$SRC/ring.c" "$work/dev/tmp/ring.c"
chroot "$work/dev" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends $DEV_PKGS >"$work/dev-apt.log" 2>&1 \
  || { tail -20 "$work/dev-apt.log" >&2; die "installing the compilers in the build copy failed"; }
chroot "$work/dev" /usr/bin/env -i PATH=/usr/bin:/bin mpicc.openmpi -O2 -o /tmp/ring.openmpi /tmp/ring.c || die "mpicc.openmpi ring.c failed"
chroot "$work/dev" /usr/bin/env -i PATH=/usr/bin:/bin mpicc.mpich -O2 -o /tmp/ring.mpich /tmp/ring.c || die "mpicc.mpich ring.c failed"
install -m 0755 "$work/dev/tmp/ring.openmpi" "$work/dev/tmp/ring.mpich" "$work/root/usr/local/bin/"
install -m 0755 "$SRC/pingpong.py" "$work/root/usr/local/bin/pingpong.py"
rm -f "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/cache/apt/*.bin
rm -rf "$work/root"/var/lib/apt/lists/*
# One import, saved: every engine loads the same image (an import per engine would give each
# its own id).
tar -C "$work/root" -c . | docker import -c 'CMD ["/bin/bash"]' -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$NAME" >/dev/null \
  || die "docker import of the root file system failed"
docker save "$NAME" -o "$TAR.tmp" || die "docker save $NAME failed"
mv "$TAR.tmp" "$TAR"
log "built $NAME in $((SECONDS - start)) s: $(du -h "$TAR" | cut -f1)"
echo "$TAR $NAME"
