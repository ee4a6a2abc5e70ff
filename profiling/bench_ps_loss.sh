#!/usr/bin/env bash
# What losing a host costs a parameter-server job under the Pi launcher's supervisor
# (jobs/pi_cluster.sh with HPDL_RESTARTS): Downpour, 1 server + 3 workers on 4 emulated
# hosts (scripts/netns_cluster.sh, 1 Gbit), the MLP on Fashion-MNIST for EPOCHS epochs,
# trained once without a loss, once losing a worker's host (link down, processes killed)
# after its first checkpoint, and once, as 1 + 2 on 3 hosts launched from the fourth,
# losing the server's host. The job goes on on the hosts left (the workers' positions
# redistributed: docs/checkpoints.md). And once losing a worker's process alone (killed, its
# host up) under `mpirun --enable-recovery --mca osc pt2pt`: the server drops it after half of
# run.watchdog_s (20 s here) and the job goes on in the same mpirun with 2 workers
# (docs/parameter_server.md, "Workers that drop out"). Prints each run's test accuracy, wall
# time and the time from the loss to training again (for the dropped worker: to its drop;
# the other workers train on meanwhile until they wait for it, at a checkpoint or the end);
# the target is accuracy within 1 point of the run without a loss.
# Needs root (network namespaces). Usage: [EPOCHS=3] profiling/bench_ps_loss.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
[ -x build/hpdl ] && [ -f data/fashion-mnist-train.h5 ] || bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/hpdl-ps-loss.XXXXXX)
export HPDL_NETNS_STATE=$work/state
cluster="bash scripts/netns_cluster.sh"
trap '$cluster down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
$cluster up 4 --rate 1gbit >/dev/null
head -3 "$HPDL_NETNS_STATE/hostfile" >"$work/hosts123"
args=(inputs/mlp_fashion_mnist.toml --set "run.output_dir=\"$work/out\"" --set train.epochs="${EPOCHS:-3}"
  --set distributed.mode=\"downpour\" --set checkpoint.every_s=2 --set train.progress=false
  --set run.watchdog_s=20)
# run NAME HOSTFILE FROM LOSE [process]: the job under the supervisor, launched from host
# FROM; host LOSE (0: none) loses its link and processes once the first checkpoint is
# written; with "process", only its hpdl process is killed, under mpirun --enable-recovery.
run() {
  local name=$1 t0 t1 again="" recovery="" awaited="resumed from"
  [ "${5:-}" != process ] || recovery="--enable-recovery --mca osc pt2pt" awaited=dropped
  t0=$(date +%s.%N)
  HPDL=$PWD/build/hpdl HPDL_RESTARTS=2 HPDL_MIN_HOSTS=2 HPDL_PROBE_S=5 HPDL_MPIRUN_ARGS="$recovery" \
    $cluster pi_cluster "$3" "$2" "${args[@]}" --set run.name="$name" >"$work/$name.out" 2>&1 &
  local job=$!
  if [ "$4" -gt 0 ]; then
    for _ in $(seq 1200); do [ -f "$work/out/$name/checkpoint.h5" ] && break; sleep 0.1; done
    if [ -n "$recovery" ]; then
      for p in $(ip netns pids "hpdl-h$4"); do
        grep -qa "hpdl.train" "/proc/$p/cmdline" 2>/dev/null && kill -9 "$p"
      done
    else
      ip netns exec "hpdl-h$4" ip link set eth0 down
      # shellcheck disable=SC2046
      kill -9 $(ip netns pids "hpdl-h$4") 2>/dev/null || true
    fi
    local lost_at
    lost_at=$(date +%s.%N)
    for _ in $(seq 1200); do grep -q "$awaited" "$work/out/$name/log.txt" 2>/dev/null && break; sleep 0.1; done
    again=$(awk -v a="$lost_at" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  fi
  wait $job || { echo "$name: the job failed"; tail -5 "$work/$name.out"; exit 1; }
  t1=$(date +%s.%N)
  [ "$4" -eq 0 ] || [ -n "$recovery" ] || ip netns exec "hpdl-h$4" ip link set eth0 up
  local acc
  acc=$(/usr/bin/python3 tests/cli/accuracy_close.py "$work/out/$name")
  local redis
  redis=$(grep -o "resuming [0-9]* workers' checkpoint on [0-9]* workers*: every worker starts in epoch [0-9]*, [0-9]*%" "$work/out/$name/log.txt" ||
    grep -o "worker [0-9]* (rank [0-9]*) dropped: silent for [0-9]* s" "$work/out/$name/log.txt" || echo "-")
  printf '| %s | %s | %.1f | %s | %s |\n' "$name" "$acc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "${again:--}" "$redis"
}
cpu_line
echo "Downpour, MLP on Fashion-MNIST, ${EPOCHS:-3} epochs, batch 32 per worker, 1 Gbit, a checkpoint every 2 s"
echo
echo "| run | test accuracy | wall s | s from the loss to training again | redistribution or drop |"
echo "| --- | --- | --- | --- | --- |"
run "1+3_no_loss" "$HPDL_NETNS_STATE/hostfile" 1 0
run "1+3_worker_host_lost" "$HPDL_NETNS_STATE/hostfile" 1 4
run "1+3_worker_process_killed" "$HPDL_NETNS_STATE/hostfile" 1 4 process
run "1+2_no_loss" "$work/hosts123" 4 0
run "1+2_server_host_lost" "$work/hosts123" 4 1
