#!/usr/bin/env bash
# An emulated cluster of real hosts on one machine: N network namespaces (hpdl-h1..hpdl-hN),
# each with one veth link into a bridge that lives in a namespace of its own (hpdl-sw), so
# nothing is created in or changed on the machine's own network. Every link is rate-limited
# with tc tbf in both directions (a Pi's 100 Mbit Ethernet by default; this kernel has no
# netem, so no added latency). Addresses: 10.77.77.11 .. 10.77.77.(10+N)/24, used only
# inside these namespaces. OpenMPI launches across them for real: mpirun runs in host 1's
# namespace and starts its daemons on the other hosts through an rsh agent that enters the
# namespace owning the address, TCP between hosts, shared memory within one.
# With --cpus-per-host C every host also gets a CPU budget of C cores: a cgroup per host
# (cgroup v1 cpu.cfs_quota_us over a short cpu.cfs_period_us, or v2 cpu.max) holding every
# process started in that host, so 8 hosts x 0.25 core are 8 slow machines whose sum is
# 2 cores, and N hosts have N times the compute of one. While budgets are set, every core of
# the machine also runs a spinner at the idle scheduling class (SCHED_IDLE: it gets only
# what no host wants): a core that a quota leaves idle for most of each period halts, and on
# a virtual machine's core the work after each halt runs slower, which a real small board
# computing on its own core never does (docs/results.md, "Emulated hosts that
# keep their cores busy"). --let-cores-idle leaves them out (the emulation before).
# With --arm64 the hosts are emulated Raspberry Pis: every process started in a host runs in
# the arm64 Debian root of scripts/arm64_system.sh (under qemu-user, a Cortex-A72), where
# this checkout and /tmp are at their own paths, so a cross-built build-arm64/hpdl runs there.
#
#   scripts/netns_cluster.sh up N [--rate 100mbit] [--slots S] [--cpus-per-host C] [--period-us P]
#                                 [--let-cores-idle] [--arm64]   start (replaces a running one)
#   scripts/netns_cluster.sh mpirun [MPIRUN ARGS...]             mpirun across all hosts
#   scripts/netns_cluster.sh exec I CMD...                       CMD inside host I
#   scripts/netns_cluster.sh pi_cluster I HOSTFILE [ARGS...]     jobs/pi_cluster.sh from host I
#   scripts/netns_cluster.sh status                              hosts, rates, bytes, CPU budgets
#   scripts/netns_cluster.sh rate I RATE                         change host I's link (a bad cable)
#   scripts/netns_cluster.sh down                                remove everything it made
#
# State (hostfile, the agent, the settings) lives in $HPDL_NETNS_STATE (/tmp/hpdl-netns).
# Needs root, iproute2 and tc (Debian: iproute2).
set -euo pipefail
state=${HPDL_NETNS_STATE:-/tmp/hpdl-netns}
subnet=10.77.77
switch=hpdl-sw

die() { echo "netns_cluster: $*" >&2; exit 2; }
host_ns() { echo "hpdl-h$1"; }
host_addr() { echo "$subnet.$((10 + $1))"; }

# Host I's CPU budget (scripts/cpu_budget.sh): the cgroup hpdl-hI.
source "$(dirname "${BASH_SOURCE[0]}")/cpu_budget.sh"
our_cgroups() { local r; r=$(cpu_budget_root); [ -n "$r" ] && find "$r" -maxdepth 1 -type d -regex '.*/hpdl-h[0-9]+' || true; }
# Sets host I's budget to CPUS cores per PERIOD microseconds.
make_cgroup() {
  cpu_budget_make "hpdl-h$1" "$2" "$3" >/dev/null ||
    die "--cpus-per-host needs a cgroup cpu controller (none usable under /sys/fs/cgroup)"
}

# The idle-class spinners, one per core (pids in $state/warm_cores), in a group of their own
# that gets only what no host wants (cgroup hpdl-warm): started with budgets, stopped by
# down. Only processes that are still such a spinner are stopped.
spin_loop='while :; do :; done'  # a spinner's command line, how down recognises one
keep_cores_warm() {
  local c cg
  cg=$(cpu_budget_make_idle hpdl-warm) || die "no cgroup cpu controller for the idle cores' spinners"
  for c in $(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))'); do  # our cores
    setsid taskset -c "$c" chrt -i 0 sh -c "$spin_loop" </dev/null >/dev/null 2>&1 &
    echo $! >>"$state/warm_cores"
    echo $! >"$cg/cgroup.procs"
  done
}
stop_warm_cores() {
  local pid r
  if [ -f "$state/warm_cores" ]; then
    for pid in $(cat "$state/warm_cores"); do
      grep -qaF "$spin_loop" "/proc/$pid/cmdline" 2>/dev/null && kill "$pid" 2>/dev/null || true
    done
    # Gone within a second (an exited one is a zombie until reaped: its cmdline is empty).
    for pid in $(cat "$state/warm_cores"); do
      for _ in $(seq 1 20); do grep -qaF "$spin_loop" "/proc/$pid/cmdline" 2>/dev/null || break; sleep 0.05; done
    done
    rm -f "$state/warm_cores"
  fi
  r=$(cpu_budget_root)
  [ -z "$r" ] || [ ! -d "$r/hpdl-warm" ] || cpu_budget_remove "$r/hpdl-warm"
}

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hpdl-(h[0-9]+|sw)$' || true; }

down() {
  local ns
  stop_warm_cores
  for ns in $(our_namespaces); do ip netns del "$ns" 2>/dev/null || true; done
  local cg
  for cg in $(our_cgroups); do cpu_budget_remove "$cg"; done
  rm -rf "$state"
}

up() {
  local n=$1; shift
  local rate=100mbit slots=1 cpus="" period=10000 arm64_root="" warm=1
  while [ $# -gt 0 ]; do
    case $1 in
      --arm64) arm64_root=$(bash "$(dirname "$0")/arm64_system.sh" --root) || die "no arm64 root"; shift ;;
      --rate) rate=$2; shift 2 ;;
      --slots) slots=$2; shift 2 ;;
      --cpus-per-host) cpus=$2; shift 2 ;;
      --period-us) period=$2; shift 2 ;;
      --let-cores-idle) warm=0; shift ;;
      *) die "unknown option '$1' (up N [--rate R] [--slots S] [--cpus-per-host C] [--period-us P] [--let-cores-idle] [--arm64])" ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "N must be 1..64, got '$n'"
  [[ $slots =~ ^[0-9]+$ ]] && [ "$slots" -ge 1 ] || die "--slots must be a positive integer"
  # The kernel takes periods of 1 ms .. 1 s and quotas of at least 1 ms.
  [[ $period =~ ^[0-9]+$ ]] && [ "$period" -ge 1000 ] && [ "$period" -le 1000000 ] ||
    die "--period-us must be 1000..1000000, got '$period'"
  if [ -n "$cpus" ]; then
    [[ $cpus =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v c="$cpus" -v p="$period" 'BEGIN { exit !(c * p >= 1000) }' ||
      die "--cpus-per-host must be a number of cores with a quota of at least 1 ms per period, got '$cpus'"
  fi
  [ "$(id -u)" -eq 0 ] || die "needs root (ip netns)"
  command -v tc >/dev/null || die "tc not found (apt-get install iproute2)"
  down
  # Any failure from here on leaves nothing behind.
  trap 'down; exit 1' ERR INT TERM
  ip netns add "$switch"
  ip -n "$switch" link add br0 type bridge forward_delay 0
  ip -n "$switch" link set br0 up
  ip -n "$switch" link set lo up
  local i ns
  for i in $(seq 1 "$n"); do
    ns=$(host_ns "$i")
    if [ -n "$cpus" ]; then make_cgroup "$i" "$cpus" "$period"; fi
    ip netns add "$ns"
    ip -n "$switch" link add "port$i" type veth peer name eth0 netns "$ns"
    ip -n "$switch" link set "port$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(host_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    # Both directions limited: the host's upload on eth0, its download on the switch port.
    # burst: at least rate/HZ (one timer tick's worth); 64 KiB serves up to ~10 Gbit.
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 50ms
    ip netns exec "$switch" tc qdisc add dev "port$i" root tbf rate "$rate" burst 64kb latency 50ms
  done
  mkdir -p "$state"
  : >"$state/hostfile"
  for i in $(seq 1 "$n"); do echo "$(host_addr "$i") slots=$slots" >>"$state/hostfile"; done
  printf 'hosts=%s\nrate=%s\nslots=%s\ncpus=%s\nperiod=%s\ncgroups=%s\narm64_root=%s\n' "$n" "$rate" "$slots" \
    "$cpus" "$period" "$([ -n "$cpus" ] && cpu_budget_root)" "$arm64_root" >"$state/settings"
  if [ -n "$cpus" ] && [ "$warm" = 1 ]; then keep_cores_warm; fi
  # OpenMPI's rsh agent: called as AGENT [options] HOST COMMAND...; runs COMMAND in HOST's
  # namespace with HOST's own host name (hpdl-hI; the file system and environment are
  # shared, as on a cluster with NFS).
  cat >"$state/agent" <<AGENT
#!/usr/bin/env bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case \$host in
  $subnet.*) i=\$(( \${host##*.} - 10 )) ;;
  *) echo "netns agent: unknown host \$host" >&2; exit 255 ;;
esac
# A host whose link is down does not answer, as ssh to a powered-off board would not.
# (Where ip cannot tell, as in an arm64 root without iproute2, the host answers.)
if link=\$(ip -n hpdl-h\$i -o link show eth0 2>/dev/null) && ! grep -q '[<,]UP[,>]' <<<"\$link"; then
  echo "ssh: connect to host \$host port 22: No route to host" >&2; exit 255
fi
# The host's CPU budget holds this process and everything it starts.
cg=\$(. "$state/settings"; [ -n "\$cgroups" ] && echo "\$cgroups/hpdl-h\$i")
if [ -n "\$cg" ]; then echo \$\$ >"\$cg/cgroup.procs" || exit 255; fi
exec nsenter --net=/run/netns/hpdl-h\$i unshare --uts /bin/sh -c "hostname hpdl-h\$i && \$*"
AGENT
  chmod +x "$state/agent"
  trap - ERR INT TERM
  # Every host reaches every other one: a TCP connection to a closed port is refused at
  # once by a reachable host (no ping needed).
  # New links can take a moment to pass traffic: up to 10 s per host.
  local tries
  for i in $(seq 2 "$n"); do
    for tries in $(seq 20); do
      local said
      said=$(ip netns exec "$(host_ns 1)" timeout 1 bash -c "exec 3<>/dev/tcp/$(host_addr "$i")/9" 2>&1 || true)
      [[ $said == *"Connection refused"* ]] && break
      [ "$tries" -lt 20 ] || { down; die "host 1 cannot reach host $i"; }
      sleep 0.5
    done
  done
  echo "netns_cluster: $n hosts at $rate ($(host_addr 1)..$(host_addr "$n")), hostfile $state/hostfile"
}

# Runs CMD... in host I's namespace under its host name (and in its CPU budget). nsenter
# enters the network namespace only: `ip netns exec` would also remount /sys, hiding the
# cgroup file systems from the ranks and the agent. UCX (OpenMPI's one-sided osc/ucx)
# would see one machine and move data through its shared memory between the namespaces,
# around the emulated links: it is held to TCP on eth0 as on separate boards.
in_host() {
  local i=$1; shift
  export UCX_TLS=${UCX_TLS:-tcp,self} UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
  # The emulated hosts share this machine's cores: a rank waiting in MPI yields its core
  # rather than spin through a whole scheduler tick while the rank it waits for needs it.
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  # shellcheck disable=SC1091
  local cgroups="" arm64_root=""; [ -f "$state/settings" ] && . "$state/settings"
  if [ -n "$cgroups" ]; then echo $$ >"$cgroups/hpdl-h$i/cgroup.procs"; fi
  # An arm64 host: CMD runs in the arm64 root, in this directory (the agent that mpirun
  # calls there enters the other hosts from inside it).
  local enter=()
  if [ -n "$arm64_root" ]; then
    # qemu-user lacks process_vm_readv, Open MPI's single-copy path within a host.
    export QEMU_CPU=${HPDL_ARM64_CPU:-cortex-a72} OMPI_MCA_btl_vader_single_copy_mechanism=none
    enter=(chroot "$arm64_root" /bin/sh -c 'cd "$0" && exec "$@"' "$PWD")
  fi
  exec nsenter --net="/run/netns/$(host_ns "$i")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' \
    "$(host_ns "$i")" "${enter[@]}" "$@"
}

require_up() { [ -f "$state/settings" ] || die "no cluster is up (scripts/netns_cluster.sh up N)"; }

run_mpirun() {
  require_up
  # shellcheck disable=SC1091
  . "$state/settings"
  local host_list="" i hosts_arg=()
  for i in $(seq 1 "$hosts"); do host_list+="${host_list:+,}$(host_addr "$i"):$slots"; done
  # Every host, unless the arguments choose hosts themselves.
  [[ " $* " == *" --host "* || " $* " == *" --hostfile "* ]] || hosts_arg=(--host "$host_list")
  in_host 1 mpirun "${hosts_arg[@]}" \
    --mca plm_rsh_agent "$state/agent" \
    --mca btl tcp,self,vader --mca btl_tcp_if_include "$subnet.0/24" \
    --mca oob_tcp_if_include "$subnet.0/24" "$@"
}

# jobs/pi_cluster.sh (the Pi launcher: its probes, restarts and supervisor) from host I over
# the emulated network: one thread a rank, the cluster's subnet, the agent for its ssh and
# mpirun's daemons; the caller's HPDL_* settings pass through, HPDL_MPIRUN_ARGS appended.
run_pi_cluster() {
  require_up
  local i=$1; shift
  export HPDL_THREADS=${HPDL_THREADS:-1} HPDL_IFACE=$subnet.0/24 HPDL_RSH=$state/agent
  export HPDL_MPIRUN_ARGS="--mca plm_rsh_agent $state/agent --mca btl tcp,self,vader ${HPDL_MPIRUN_ARGS:-}"
  in_host "$i" bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/jobs/pi_cluster.sh" "$@"
}

status() {
  require_up
  # shellcheck disable=SC1091
  . "$state/settings"
  echo "hosts $hosts, rate $rate per link and direction, slots $slots, CPU budget ${cpus:-none}${cpus:+ cores per host (period ${period} us)}$([ -f "$state/warm_cores" ] && echo ", idle cores kept busy")"
  local i
  for i in $(seq 1 "$hosts"); do
    local up down_bytes throttled=""
    up=$(ip netns exec "$(host_ns "$i")" tc -s qdisc show dev eth0 | awk '/Sent/{print $2; exit}')
    down_bytes=$(ip netns exec "$switch" tc -s qdisc show dev "port$i" | awk '/Sent/{print $2; exit}')
    [ -n "$cgroups" ] && throttled=", throttled in $(awk '$1 == "nr_throttled" { print $2 }' "$cgroups/hpdl-h$i/cpu.stat") of $(awk '$1 == "nr_periods" { print $2 }' "$cgroups/hpdl-h$i/cpu.stat") periods"
    echo "host $i $(host_addr "$i"): sent $up bytes, received $down_bytes bytes$throttled"
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  up) [ $# -ge 1 ] || die "usage: up N [--rate R] [--slots S]"; up "$@" ;;
  down) down; echo "netns_cluster: down" ;;
  mpirun) run_mpirun "$@" ;;
  exec)
    require_up
    [ $# -ge 2 ] || die "usage: exec I CMD..."
    i=$1; shift
    in_host "$i" "$@" ;;
  pi_cluster) [ $# -ge 2 ] || die "usage: pi_cluster I HOSTFILE [ARGS...]"; run_pi_cluster "$@" ;;
  status) status ;;
  rate)
    require_up
    [ $# -eq 2 ] || die "usage: rate I RATE"
    ip netns exec "$(host_ns "$1")" tc qdisc change dev eth0 root tbf rate "$2" burst 64kb latency 50ms
    ip netns exec "$switch" tc qdisc change dev "port$1" root tbf rate "$2" burst 64kb latency 50ms
    echo "netns_cluster: host $1's link now $2" ;;
  *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || [ "$cmd" = -h ] || [ "$cmd" = --help ] || exit 2 ;;
esac
