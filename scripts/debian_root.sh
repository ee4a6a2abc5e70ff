# Sourced by fresh_system.sh and arm64_system.sh: a Debian 12 root in a folder, made with
# debootstrap from this machine's own apt mirror, entered with chroot; the processes and
# mounts inside it removed on the way out.
#   root_mirror SUITE            the first URI of this machine's apt sources serving SUITE
#   root_bootstrap TAR ARCH LOG  a minimal Debian root for ARCH (amd64, arm64), packed into
#                                TAR (made once, kept as a cache)
#   root_apt_sources ROOT        ROOT's apt sources, network settings, resolv.conf and hosts:
#                                those of this machine
#   root_mount_system ROOT DEBS  /proc, /sys, /dev and the .deb cache DEBS mounted inside ROOT
#   root_pids ROOT               the processes whose root is ROOT
#   root_kill ROOT               every process whose root is ROOT (TERM, then KILL)
#   root_unmount ROOT            every mount under ROOT, the innermost first; fails if one stays
#   root_install_tools CMD:PACKAGE...  installs the Debian PACKAGE of each missing CMD
#   root_binfmt_arm64            arm64 binaries run here (qemu-user-static through binfmt_misc)
#   root_say ...                 a line on stderr, prefixed with the script's name
root_say() { echo "$(basename "$0" .sh): $*" >&2; }

root_mirror() {
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
  done | head -n 1
}

root_install_tools() {
  local missing=() tool package
  for tool in "$@"; do
    package=${tool#*:}
    command -v "${tool%%:*}" >/dev/null || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  root_say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${missing[@]}" >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
}

root_bootstrap() {
  local tar=$1 arch=$2 log=$3 mirror tmp
  [ -f "$tar" ] && return 0
  mirror=$(root_mirror bookworm)
  [ -n "$mirror" ] || { root_say "no Debian mirror for 'bookworm' in this machine's apt sources"; return 1; }
  root_install_tools debootstrap:debootstrap
  root_say "bootstrapping a minimal Debian bookworm ($arch) from $mirror (cached in $tar)"
  tmp=$(mktemp -d "$(dirname "$tar")/bootstrap.XXXXXX")
  if ! debootstrap --arch "$arch" --variant=minbase bookworm "$tmp/root" "$mirror" >"$log" 2>&1; then
    tail -20 "$log" >&2
    rm -rf "$tmp"
    root_say "debootstrap failed (log: $log)"
    return 1
  fi
  tar -C "$tmp/root" -cf "$tmp/base.tar" .
  mv "$tmp/base.tar" "$tar"
  rm -rf "$tmp"
}

root_apt_sources() {
  local root=$1 mirror security
  mirror=$(root_mirror bookworm)
  security=$(root_mirror bookworm-security)
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -z "$security" ] || echo "deb $security bookworm-security main"
  } >"$root/etc/apt/sources.list"
  # Only the network-access settings of this machine's apt (proxy, archive date checks).
  grep -h -E '^[[:space:]]*Acquire::(https?::Proxy|Check-Valid-Until|Check-Date|Languages)' \
    /etc/apt/apt.conf.d/* >"$root/etc/apt/apt.conf.d/00fresh-system-network" 2>/dev/null || true
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  cp /etc/hosts "$root/etc/hosts"
  hostname >"$root/etc/hostname"
}

root_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" != "$1" ] || echo "${p#/proc/}"
  done
}

root_kill() {
  local sig
  for sig in TERM KILL; do
    # shellcheck disable=SC2046
    kill -"$sig" $(root_pids "$1") 2>/dev/null || true
    sleep 1
  done
}

# /proc, /sys, /dev and the .deb cache DEBS (kept between roots) mounted inside ROOT. /sys
# with its submounts: a real machine has its cgroup file systems under /sys/fs/cgroup
# (slurmd refuses to start without them). rslave: nothing done inside propagates out.
root_mount_system() {
  local root=$1 debs=$2
  mkdir -p "$debs/partial" "$root/var/cache/apt/archives"
  mount --bind "$debs" "$root/var/cache/apt/archives"
  mount --bind /proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --make-rslave "$root/sys"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
  if mountpoint -q /dev/shm; then mount --bind /dev/shm "$root/dev/shm"; fi
}

root_mounts() { awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r; }

root_unmount() {
  local root=$1 m
  for m in $(root_mounts "$root"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || root_say "cannot unmount $m"
  done
  if [ -n "$(root_mounts "$root")" ]; then
    root_say "mounts remain under $root"
    return 1
  fi
}

# arm64 binaries run here through qemu-user, registered with binfmt_misc with the F flag (the
# emulator is opened now, so it also serves inside a chroot that lacks it). QEMU_CPU picks
# the core it emulates.
root_binfmt_arm64() {
  local conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  root_install_tools qemu-aarch64-static:qemu-user-static
  if [ ! -f /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
      { root_say "cannot mount binfmt_misc (needed to run arm64 binaries)"; return 1; }
  fi
  if [ ! -f /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    [ -f "$conf" ] || { root_say "$conf is missing (reinstall qemu-user-static)"; return 1; }
    cat "$conf" >/proc/sys/fs/binfmt_misc/register ||
      { root_say "cannot register qemu-aarch64 with binfmt_misc"; return 1; }
  fi
  grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 && grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 ||
    { root_say "binfmt_misc's qemu-aarch64 entry is disabled or lacks the F flag"; return 1; }
}
