#!/usr/bin/env bash
# Runs hpdl on a Raspberry-Pi (or any small ARM) cluster without Slurm, through
# `mpirun --hostfile`. Every node needs hpdl at the same path (or on PATH) and the data
# and config at the same paths (an NFS share is simplest); rank 0's node writes outputs/.
#
#   bash jobs/pi_cluster.sh HOSTFILE CONFIG [hpdl train arguments, e.g. --set k=v --resume]
#
# Hostfile: one node per line, "HOST [slots=N]" (N = ranks that node may run, default 1);
# '#' starts a comment; blank lines are ignored. For example:
#   # four Pi 4 boards, one rank each, 4 cores per rank
#   pi-01 slots=1
#   pi-02 slots=1
#   192.168.1.13
#   pi-04.local slots=1
#
# Defaults for small ARM nodes, all overridable from the environment:
#   HPDL_RANKS_PER_NODE  ranks started per node (1: one rank uses all its cores)
#   HPDL_THREADS         OpenMP threads per rank (the node's cores / ranks per node;
#                        computed from this machine's nproc when unset)
#   HPDL_IFACE           network interface for MPI traffic, e.g. eth0 (unset: let Open MPI pick)
#   HPDL                 the hpdl binary (default: hpdl on PATH, else ./build/hpdl)
#   HPDL_MPIRUN_ARGS     anything else for mpirun (e.g. --oversubscribe for a test on one host)
#   HPDL_RESTARTS        when > 0, keep a synchronous job training when a host dies: run
#                        again with --resume on the hosts that answer, up to this many times
#                        (jobs/elastic.sh; HPDL_MIN_HOSTS, HPDL_RSH, HPDL_PROBE_S)
# A stop request (SIGTERM or Ctrl-C to this script, or SIGUSR1 to mpirun) makes every rank
# finish its step, write a checkpoint and exit 75 (jobs/mpirun_stop.sh turns SIGTERM/SIGINT
# into the SIGUSR1 that mpirun forwards at once); run the same command with --resume to continue.
set -u
[ $# -ge 2 ] || { echo "usage: pi_cluster.sh HOSTFILE CONFIG [hpdl train arguments...]" >&2; exit 2; }
hostfile=$1
shift
[ -f "$hostfile" ] || { echo "pi_cluster: hostfile $hostfile not found" >&2; exit 1; }

# Parse and check the hostfile first: a bad line is named, nothing is started.
nodes=0 slots_total=0 lineno=0 hosts=() slots=()
while IFS= read -r raw || [ -n "$raw" ]; do
  lineno=$((lineno + 1))
  line=$(printf '%s' "$raw" | sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  [ -n "$line" ] || continue
  if ! [[ "$line" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?([[:space:]]+slots=([1-9][0-9]*))?$ ]]; then
    echo "pi_cluster: $hostfile:$lineno: cannot parse '$line' (expected 'HOST [slots=N]' with N >= 1)" >&2
    exit 1
  fi
  nodes=$((nodes + 1))
  slots_total=$((slots_total + ${BASH_REMATCH[4]:-1}))
  hosts+=("${line%%[[:space:]]*}")
  slots+=("${BASH_REMATCH[4]:-1}")
done < "$hostfile"
[ $nodes -gt 0 ] || { echo "pi_cluster: $hostfile lists no hosts" >&2; exit 1; }

per_node=${HPDL_RANKS_PER_NODE:-1}
ranks=$((nodes * per_node))
[ $ranks -le $slots_total ] || [[ "${HPDL_MPIRUN_ARGS:-}" == *oversubscribe* ]] || {
  echo "pi_cluster: $ranks ranks ($per_node per node) exceed the hostfile's $slots_total slots" >&2
  exit 1
}
threads=${HPDL_THREADS:-$(( $(nproc) / per_node > 0 ? $(nproc) / per_node : 1 ))}
hpdl=${HPDL:-$(command -v hpdl || echo "$PWD/build/hpdl")}
iface=()
[ -n "${HPDL_IFACE:-}" ] && iface=(--mca btl_tcp_if_include "$HPDL_IFACE" --mca oob_tcp_if_include "$HPDL_IFACE")
mpirun_args() {  # HOSTFILE RANKS: mpirun's arguments for one run of the job
  echo "pi_cluster: $2 ranks on $(($2 / per_node)) nodes ($per_node per node, $threads threads each)" >&2
  args=(--hostfile "$1" -np "$2" --map-by "ppr:$per_node:node" --bind-to none
    -x OMP_NUM_THREADS="$threads" "${iface[@]}")
}
if [ "${HPDL_RESTARTS:-0}" -gt 0 ]; then
  source "$(dirname "$0")/elastic.sh"
  supervise "$@"
  exit $?
fi
mpirun_args "$hostfile" "$ranks"
# shellcheck disable=SC2086
exec bash "$(dirname "$0")/mpirun_stop.sh" "${args[@]}" ${HPDL_MPIRUN_ARGS:-} "$hpdl" train "$@"
