#!/usr/bin/env bash
# An emulated cluster of real hosts on one machine: N network namespaces (hpdl-h1..hpdl-hN),
# each with one veth link into a bridge that lives in a namespace of its own (hpdl-sw), so
# nothing is created in or changed on the machine's own network. Every link is rate-limited
# with tc tbf in both directions (a Pi's 100 Mbit Ethernet by default; this kernel has no
# netem, so no added latency). Addresses: 10.77.77.11 .. 10.77.77.(10+N)/24, used only
# inside these namespaces. OpenMPI launches across them for real: mpirun runs in host 1's
# namespace and starts its daemons on the other hosts through an rsh agent that enters the
# namespace owning the address, TCP between hosts, shared memory within one.
#
#   scripts/netns_cluster.sh up N [--rate 100mbit] [--slots S]   start (replaces a running one)
#   scripts/netns_cluster.sh mpirun [MPIRUN ARGS...]             mpirun across all hosts
#   scripts/netns_cluster.sh exec I CMD...                       CMD inside host I
#   scripts/netns_cluster.sh status                              hosts, rates, bytes per link
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

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hpdl-(h[0-9]+|sw)$' || true; }

down() {
  local ns
  for ns in $(our_namespaces); do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$state"
}

up() {
  local n=$1; shift
  local rate=100mbit slots=1
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --slots) slots=$2; shift 2 ;;
      *) die "unknown option '$1' (up N [--rate R] [--slots S])" ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "N must be 1..64, got '$n'"
  [[ $slots =~ ^[0-9]+$ ]] && [ "$slots" -ge 1 ] || die "--slots must be a positive integer"
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
  printf 'hosts=%s\nrate=%s\nslots=%s\n' "$n" "$rate" "$slots" >"$state/settings"
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
exec ip netns exec hpdl-h\$i unshare --uts /bin/sh -c "hostname hpdl-h\$i && \$*"
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

# Runs CMD... in host I's namespace under its host name. UCX (OpenMPI's one-sided osc/ucx)
# would see one machine and move data through its shared memory between the namespaces,
# around the emulated links: it is held to TCP on eth0 as on separate boards.
in_host() {
  local i=$1; shift
  export UCX_TLS=${UCX_TLS:-tcp,self} UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
  # The emulated hosts share this machine's cores: a rank waiting in MPI yields its core
  # rather than spin through a whole scheduler tick while the rank it waits for needs it.
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  exec ip netns exec "$(host_ns "$i")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' \
    "$(host_ns "$i")" "$@"
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

status() {
  require_up
  # shellcheck disable=SC1091
  . "$state/settings"
  echo "hosts $hosts, rate $rate per link and direction, slots $slots"
  local i
  for i in $(seq 1 "$hosts"); do
    local up down_bytes
    up=$(ip netns exec "$(host_ns "$i")" tc -s qdisc show dev eth0 | awk '/Sent/{print $2; exit}')
    down_bytes=$(ip netns exec "$switch" tc -s qdisc show dev "port$i" | awk '/Sent/{print $2; exit}')
    echo "host $i $(host_addr "$i"): sent $up bytes, received $down_bytes bytes"
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
  status) status ;;
  rate)
    require_up
    [ $# -eq 2 ] || die "usage: rate I RATE"
    ip netns exec "$(host_ns "$1")" tc qdisc change dev eth0 root tbf rate "$2" burst 64kb latency 50ms
    ip netns exec "$switch" tc qdisc change dev "port$1" root tbf rate "$2" burst 64kb latency 50ms
    echo "netns_cluster: host $1's link now $2" ;;
  *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || [ "$cmd" = -h ] || [ "$cmd" = --help ] || exit 2 ;;
esac
