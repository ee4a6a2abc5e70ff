#!/usr/bin/env bash
# An emulated Raspberry Pi on this machine: an arm64 Debian 12 root (Raspberry Pi OS 64-bit
# is Debian 12 arm64) whose programs run through qemu-user as a Cortex-A72, the Pi 4's core
# (NEON; no SVE, no bf16). The root holds the Debian packages scripts/setup.sh installs, so
# it is also the sysroot of the arm64 cross-build (scripts/arm64_build.sh). This checkout
# and ../shared appear inside it at their own paths, /tmp is this machine's /tmp (the
# emulated cluster's state, the tests' temporary files), and so are /proc, /sys and /dev.
#
# Usage (as root):
#   bash scripts/arm64_system.sh "COMMAND"   COMMAND with bash in this checkout inside the root
#                                             (environment: HOME, PATH, LANG, TERM, CI, QEMU_CPU)
#   bash scripts/arm64_system.sh --root      make the root ready, leave it attached, print its path
#   bash scripts/arm64_system.sh --detach    end the processes inside and remove its mounts
#
# The root is made once (debootstrap, then `setup.sh --packages-only` inside it: about 6
# minutes here) and kept in $HPDL_ARM64_CACHE (default /var/tmp/hpdl-arm64); it is brought up
# to date when setup.sh's package list changes. To start over: --detach, then rm -rf that
# folder (never while attached: the checkout and /tmp are mounted inside it).
# HPDL_ARM64_CPU (default cortex-a72) is the emulated core.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
source scripts/debian_root.sh
say() { root_say "$@"; }

[ "$(id -u)" -eq 0 ] || { say "must run as root (debootstrap, chroot, mounts)"; exit 2; }
[ $# -eq 1 ] || { sed -n '9,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cache=${HPDL_ARM64_CACHE:-/var/tmp/hpdl-arm64}
root=$cache/root
shared=$(readlink -f ../shared 2>/dev/null || true)
cpu=${HPDL_ARM64_CPU:-cortex-a72}

attached() { mountpoint -q "$root/proc"; }

# The kernel's file systems, /tmp and the network namespaces, mounted inside the root once;
# then this checkout and ../shared, each checked on its own: the root may already be attached
# for another checkout (a second clone, a run left attached), and a checkout not mounted
# inside would be missing there ("cd: build-arm64: No such file or directory").
attach() {
  if ! attached; then
    root_mount_system "$root" "$cache/debs"
    mount --bind /tmp "$root/tmp"
    # Network namespaces (the emulated cluster's hosts), also those made later: /run/netns is
    # a shared mount, as `ip netns` makes it, and its copy inside receives new ones.
    mkdir -p /run/netns "$root/run/netns"
    mountpoint -q /run/netns || { mount --bind /run/netns /run/netns && mount --make-shared /run/netns; }
    mount --rbind /run/netns "$root/run/netns"
    mount --make-rslave "$root/run/netns"
  fi
  bind_inside "$src"
  [ -z "$shared" ] || [ ! -d "$shared" ] || bind_inside "$shared"
}

# DIR at its own path inside the root, unless that path already shows DIR itself (a bind
# mount keeps the device and inode numbers). A mount there of another folder (a checkout
# removed and cloned again at the same path while the root stayed attached) is taken away
# first: mounting over it fails ("mount(2) system call failed: No such file or directory").
bind_inside() {
  [ "$(stat -c %d:%i "$1")" != "$(stat -c %d:%i "$root$1" 2>/dev/null)" ] || return 0
  if mountpoint -q "$root$1"; then
    umount "$root$1" 2>/dev/null || umount -l "$root$1" ||
      { say "cannot unmount the old $root$1"; return 1; }
  fi
  mkdir -p "$root$1"
  mount --bind "$1" "$root$1"
}

detach() {
  [ -d "$root" ] || return 0
  root_kill "$root"
  local m
  for m in $(root_mounts "$root"); do
    [ "$m" = "$root" ] || umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "cannot unmount $m"
  done
  if root_mounts "$root" | grep -qv "^$root\$"; then say "mounts remain under $root"; return 1; fi
}

# qemu-user lacks process_vm_readv (ENOSYS), which Open MPI's shared-memory transport uses
# for large messages between ranks of one machine ("Read -1, expected N, errno = 38"): it
# copies through shared memory instead, as on machines without cross-memory attach.
in_root() {
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI="$CI"} QEMU_CPU="$cpu" \
    OMPI_MCA_btl_vader_single_copy_mechanism=none \
    chroot "$root" /bin/bash -c "cd '$src' && $1" 9>&-
}

# Made once: the base, this machine's apt sources, then setup.sh's packages (its list is
# kept in the root; a changed list installs again).
prepare() {
  mkdir -p "$cache"
  exec 9>"$cache/lock"
  flock 9
  root_binfmt_arm64
  local want have
  want=$(bash scripts/setup.sh --list-packages)
  if [ ! -f "$root/etc/hpdl-packages" ]; then
    detach
    rm -rf "$root"
    root_bootstrap "$cache/base-bookworm-arm64-minbase.tar" arm64 "$cache/bootstrap.log"
    rm -rf "$root.new"
    mkdir "$root.new"
    tar -C "$root.new" -xf "$cache/base-bookworm-arm64-minbase.tar"
    chmod 0755 "$root.new"
    root_apt_sources "$root.new"
    mv "$root.new" "$root"
  fi
  attach
  have=$(cat "$root/etc/hpdl-packages" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    say "installing setup.sh's packages in the arm64 root $root (under emulation: minutes)"
    local t0=$SECONDS
    in_root "bash scripts/setup.sh --packages-only" >"$cache/packages.log" 2>&1 ||
      { tail -20 "$cache/packages.log" >&2; say "package installation failed (log: $cache/packages.log)"; exit 1; }
    echo "$want" >"$root/etc/hpdl-packages"
    say "packages installed in $((SECONDS - t0)) s"
  fi
  exec 9>&-
}

case $1 in
  --detach) detach ;;
  --root) prepare; echo "$root" ;;
  -*) say "unknown option '$1'"; exit 2 ;;
  *)
    was_attached=0
    attached && was_attached=1
    prepare
    # Mounts this run made are removed again when nothing runs inside any more.
    trap 'if [ $was_attached = 0 ] && [ -z "$(root_pids "$root")" ]; then detach || true; fi' EXIT
    in_root "$1" ;;
esac
