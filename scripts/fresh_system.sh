#!/usr/bin/env bash
# Runs COMMAND on a brand-new minimal Debian 12 system: a root made by
# `debootstrap --variant=minbase bookworm` (nothing else installed), holding a clean
# `git archive HEAD` of this repository at /work/hpdl and a copy of ../shared at
# /work/shared. This is how CI proves that the README's commands set up everything
# themselves (a package installed by hand on the developer's machine cannot hide here).
#
# Usage (as root): bash scripts/fresh_system.sh [--keep] [--arch arm64] "COMMAND"
#   COMMAND runs with bash in /work/hpdl inside the new root, with a clean environment
#   (HOME, PATH, LANG, TERM and CI only). The script exits with COMMAND's status.
#   --keep leaves the root in place for inspection (its path is printed; remove it by hand).
#   --arch arm64: a brand-new Raspberry Pi OS (64-bit) instead: Debian 12 arm64, run under
#   qemu-user as a Cortex-A72 (QEMU_CPU; HPDL_ARM64_CPU picks another), without the CUDA
#   toolkit. Everything runs emulated: expect hours for a build and the tests.
# The mirror is the one this machine's own apt sources use. The bootstrapped base and
# every downloaded .deb are cached under $HPDL_FRESH_CACHE (default /var/tmp/hpdl-fresh),
# so a repeat run spends its time on the build and tests; `rm -rf` that folder to refresh.
# Mounts, processes left running inside (e.g. the tests' Slurm daemons) and the root
# itself are removed on every exit path; a run killed with SIGKILL is cleaned by the next.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

keep=0 arch=amd64
while [ $# -gt 1 ]; do
  case $1 in
    --keep) keep=1; shift ;;
    --arch) arch=${2:-}; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ] || { [ "$arch" != amd64 ] && [ "$arch" != arm64 ]; }; then
  echo "usage: bash scripts/fresh_system.sh [--keep] [--arch arm64] \"COMMAND\"" >&2
  exit 2
fi
command=$1
source scripts/debian_root.sh
say() { root_say "$@"; }
[ "$(id -u)" -eq 0 ] || { say "must run as root (debootstrap, chroot, mounts)"; exit 2; }
[ -d ../shared ] || { say "../shared is missing beside $src"; exit 2; }
git rev-parse --verify -q HEAD >/dev/null || { say "$src is not a git checkout with a commit"; exit 2; }

suite=bookworm
cache=${HPDL_FRESH_CACHE:-/var/tmp/hpdl-fresh}
mkdir -p "$cache/debs/partial" "$cache/runs"
# One run at a time per cache (they share the .deb folder); a second one is refused.
exec 9>"$cache/lock"
flock -n 9 || { say "another fresh_system.sh run is using $cache (set HPDL_FRESH_CACHE to use another)"; exit 2; }

# --- the cached base ----------------------------------------------------------------------
emulate=()
if [ "$arch" = arm64 ]; then
  root_binfmt_arm64 || exit 1
  # qemu-user lacks process_vm_readv, Open MPI's single-copy path within a machine.
  emulate=(QEMU_CPU="${HPDL_ARM64_CPU:-cortex-a72}" OMPI_MCA_btl_vader_single_copy_mechanism=none)
  base=$cache/base-$suite-arm64-minbase.tar
else
  base=$cache/base-$suite-minbase.tar
fi
root_bootstrap "$base" "$arch" "$cache/bootstrap-$arch.log" || exit 1

# --- cleanup of a run folder: processes inside, mounts, files ----------------------------
# A run folder holds root/ and owner (the PID of the fresh_system.sh that made it).
cleanup_run() {
  root_kill "$1/root"
  root_unmount "$1/root" || { say "not removing $1"; return 1; }
  rm -rf "$1"
}
# Runs whose fresh_system.sh is gone (killed with SIGKILL) are cleaned now.
for old in "$cache"/runs/*/; do
  [ -d "$old" ] || continue
  old=${old%/}
  owner=$(cat "$old/owner" 2>/dev/null || echo 0)
  [ "$owner" != kept ] || continue
  if [ "$owner" = 0 ] || ! kill -0 "$owner" 2>/dev/null; then cleanup_run "$old" || true; fi
done

run=$(mktemp -d "$cache/runs/run.XXXXXX")
echo $$ >"$run/owner"
root=$run/root
finish() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ "$keep" = 1 ]; then
    echo kept >"$run/owner"
    say "kept $root (mounts removed; processes started inside may still run; rm -rf $run when done)"
    root_unmount "$root" || true
  else
    cleanup_run "$run" || true
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

t0=$(date +%s)
mkdir "$root"
tar -C "$root" -xf "$base"
# Package scripts run as other users (munge's, _apt): the root must be world-readable.
chmod 0755 "$root"

# What a freshly installed machine has: its apt sources (this machine's mirror, with
# updates and security), its network settings, its host name. Nothing is installed.
root_apt_sources "$root"

# The project (a clean archive of HEAD) and ../shared, side by side as in a checkout.
mkdir -p "$root/work/hpdl"
git archive --format=tar HEAD | tar -C "$root/work/hpdl" -xf -
cp -a ../shared "$root/work/shared"

# The root is a mount point, as / is on a real machine (`ip netns exec` remounts / as a
# slave in its own mount namespace and fails on a plain directory).
mount --bind "$root" "$root"
# Downloaded packages persist between runs; the kernel's file systems are bound in.
root_mount_system "$root" "$cache/debs"
# NVIDIA's CUDA toolkit is not a Debian package: where this machine has one (this one and
# CI do, without a GPU), the new root gets it read-only at the same path, as a cluster's
# CUDA module would provide it, so the CUDA backend is built and its host tests run there.
cuda_dir=$(readlink -f /usr/local/cuda 2>/dev/null || true)
if [ "$arch" = amd64 ] && [ -n "$cuda_dir" ] && [ -x "$cuda_dir/bin/nvcc" ]; then
  mkdir -p "$root$cuda_dir"
  mount --bind "$cuda_dir" "$root$cuda_dir"
  mount -o remount,bind,ro "$root$cuda_dir"
  [ "$cuda_dir" = /usr/local/cuda ] || ln -sfn "$cuda_dir" "$root/usr/local/cuda"
fi
say "fresh Debian $suite ($arch) root ready in $(($(date +%s) - t0)) s at $root (HEAD $(git rev-parse --short HEAD))"

env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI="$CI"} "${emulate[@]}" \
  chroot "$root" /bin/bash -c "cd /work/hpdl && $command" 9>&-
exit $?
