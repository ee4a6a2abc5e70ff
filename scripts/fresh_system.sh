#!/usr/bin/env bash
# Runs COMMAND on a brand-new minimal Debian 12 system: a root made by
# `debootstrap --variant=minbase bookworm` (nothing else installed), holding a clean
# `git archive HEAD` of this repository at /work/hpdl and a copy of ../shared at
# /work/shared. This is how CI proves that the README's commands set up everything
# themselves (a package installed by hand on the developer's machine cannot hide here).
#
# Usage (as root): bash scripts/fresh_system.sh [--keep] "COMMAND"
#   COMMAND runs with bash in /work/hpdl inside the new root, with a clean environment
#   (HOME, PATH, LANG, TERM and CI only). The script exits with COMMAND's status.
#   --keep leaves the root in place for inspection (its path is printed; remove it by hand).
# The mirror is the one this machine's own apt sources use. The bootstrapped base and
# every downloaded .deb are cached under $HPDL_FRESH_CACHE (default /var/tmp/hpdl-fresh),
# so a repeat run spends its time on the build and tests; `rm -rf` that folder to refresh.
# Mounts, processes left running inside (e.g. the tests' Slurm daemons) and the root
# itself are removed on every exit path; a run killed with SIGKILL is cleaned by the next.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

keep=0
if [ "${1:-}" = "--keep" ]; then keep=1; shift; fi
if [ $# -ne 1 ]; then
  echo "usage: bash scripts/fresh_system.sh [--keep] \"COMMAND\"" >&2
  exit 2
fi
command=$1
say() { echo "fresh_system: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "must run as root (debootstrap, chroot, mounts)"; exit 2; }
[ -d ../shared ] || { say "../shared is missing beside $src"; exit 2; }
git rev-parse --verify -q HEAD >/dev/null || { say "$src is not a git checkout with a commit"; exit 2; }

suite=bookworm
cache=${HPDL_FRESH_CACHE:-/var/tmp/hpdl-fresh}
mkdir -p "$cache/debs/partial" "$cache/runs"
# One run at a time per cache (they share the .deb folder); a second one is refused.
exec 9>"$cache/lock"
flock -n 9 || { say "another fresh_system.sh run is using $cache (set HPDL_FRESH_CACHE to use another)"; exit 2; }

# --- the machine's own Debian mirrors (deb822 .sources or one-line sources.list) -------
# Prints the first URI serving SUITE.
mirror_for() {
  local want=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v want="$want" '
      function flush() { if (uri != "" && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ")) { print uri; found = 1; exit } }
      /^[[:space:]]*$/ { flush(); uri = ""; suites = ""; types = ""; next }
      /^URIs:/ { uri = $2 } /^Suites:/ { $1 = ""; suites = $0 } /^Types:/ { $1 = ""; types = $0 }
      END { if (!found) flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -E 's/\[[^]]*\]//' "$f" | awk -v want="$want" '$1 == "deb" && $3 == want { print $2 }'
  done
}
mirror=$(mirror_for "$suite" | head -n 1)
security=$(mirror_for "$suite-security" | head -n 1)
[ -n "$mirror" ] || { say "no Debian mirror for '$suite' in this machine's apt sources"; exit 2; }

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
fi

# --- the cached base ----------------------------------------------------------------------
base=$cache/base-$suite-minbase.tar
if [ ! -f "$base" ]; then
  say "bootstrapping a minimal Debian $suite from $mirror (cached in $base)"
  tmp=$(mktemp -d "$cache/bootstrap.XXXXXX")
  if ! debootstrap --variant=minbase "$suite" "$tmp/root" "$mirror" >"$tmp/log" 2>&1; then
    tail -20 "$tmp/log" >&2
    rm -rf "$tmp"
    say "debootstrap failed"
    exit 1
  fi
  tar -C "$tmp/root" -cf "$tmp/base.tar" .
  mv "$tmp/base.tar" "$base"
  rm -rf "$tmp"
fi

# --- cleanup of a run folder: processes inside, mounts, files ----------------------------
# A run folder holds root/ and owner (the PID of the fresh_system.sh that made it).
cleanup_run() {
  local run=$1 root=$1/root p sig m
  for sig in TERM KILL; do
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -"$sig" "${p#/proc/}" 2>/dev/null
    done
    sleep 1
  done
  # Innermost mounts first.
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "cannot unmount $m"
  done
  if awk -v r="$root" '$2 == r || index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    say "mounts remain under $root; not removing it"
    return 1
  fi
  rm -rf "$run"
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
    for m in $(awk -v r="$root" 'index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
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
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [ -z "$security" ] || echo "deb $security $suite-security main"
} >"$root/etc/apt/sources.list"
# Only the network-access settings of this machine's apt (proxy, archive date checks).
grep -h -E '^[[:space:]]*Acquire::(https?::Proxy|Check-Valid-Until|Check-Date|Languages)' \
  /etc/apt/apt.conf.d/* >"$root/etc/apt/apt.conf.d/00fresh-system-network" 2>/dev/null || true
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
hostname >"$root/etc/hostname"

# The project (a clean archive of HEAD) and ../shared, side by side as in a checkout.
mkdir -p "$root/work/hpdl"
git archive --format=tar HEAD | tar -C "$root/work/hpdl" -xf -
cp -a ../shared "$root/work/shared"

# The root is a mount point, as / is on a real machine (`ip netns exec` remounts / as a
# slave in its own mount namespace and fails on a plain directory).
mount --bind "$root" "$root"
# Downloaded packages persist between runs; the kernel's file systems are bound in.
mkdir -p "$root/var/cache/apt/archives"
mount --bind "$cache/debs" "$root/var/cache/apt/archives"
mount --bind /proc "$root/proc"
# /sys with its submounts: a real machine has its cgroup file systems under /sys/fs/cgroup
# (slurmd refuses to start without them). rslave: nothing done inside propagates out.
mount --rbind /sys "$root/sys"
mount --make-rslave "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
if mountpoint -q /dev/shm; then mount --bind /dev/shm "$root/dev/shm"; fi
# NVIDIA's CUDA toolkit is not a Debian package: where this machine has one (this one and
# CI do, without a GPU), the new root gets it read-only at the same path, as a cluster's
# CUDA module would provide it, so the CUDA backend is built and its host tests run there.
cuda_dir=$(readlink -f /usr/local/cuda 2>/dev/null || true)
if [ -n "$cuda_dir" ] && [ -x "$cuda_dir/bin/nvcc" ]; then
  mkdir -p "$root$cuda_dir"
  mount --bind "$cuda_dir" "$root$cuda_dir"
  mount -o remount,bind,ro "$root$cuda_dir"
  [ "$cuda_dir" = /usr/local/cuda ] || ln -sfn "$cuda_dir" "$root/usr/local/cuda"
fi
say "fresh Debian $suite root ready in $(($(date +%s) - t0)) s at $root (HEAD $(git rev-parse --short HEAD))"

env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI="$CI"} \
  chroot "$root" /bin/bash -c "cd /work/hpdl && $command" 9>&-
exit $?
