#!/usr/bin/env bash
# DC-ASGD with 1 server + 7 workers on the Fashion-MNIST MLP finishes in bounded time (the
# watchdog would end a starved run) and serves its workers fairly: when the first worker
# has finished, every other one has pushed at least half as often. Two places:
#   localhost  8 ranks on this machine, once per one-sided component (osc pt2pt, rdma, ucx),
#              each rank in a CPU budget of its own (0.4 core for the server, 0.2 for each
#              worker) where a cgroup cpu controller exists
#   cluster    8 emulated hosts (scripts/netns_cluster.sh) on 100 Mbit links with 0.25
#              core each: where DC-ASGD's old exclusive-lock push let workers wait for
#              minutes and the watchdog ended the run
# Usage: ps_fairness.sh SOURCE_DIR HPDL WORK_DIR localhost|cluster
# Skips (77) without the prepared data, or namespaces and cgroups for `cluster`.
set -eu
src=$1 hpdl=$2 work=$3 where=$4
source "$src/tests/support/skip.sh"
cd "$src"
for f in data/fashion-mnist-train.h5; do [ -f "$f" ] || skip "$f is missing (run scripts/setup.sh)"; done
export OMP_NUM_THREADS=1
train() {  # NAME STEPS MPIRUN...
  local name=$1 steps=$2
  shift 2
  "$@" "$hpdl" train inputs/mlp_fashion_mnist.toml --set 'distributed.mode="dcasgd"' \
    --set train.epochs=1 --set train.max_steps="$steps" --set 'data.test_file=""' \
    --set train.progress=false --set run.watchdog_s=60 --set run.output_dir="\"$work/out\"" \
    --set run.name="\"$name\"" --overwrite >"$work/$name.log" 2>&1 ||
    { tail -n 20 "$work/$name.log"; echo "FAIL: $name did not finish"; exit 1; }
  grep fairness "$work/out/$name/log.txt"
  /usr/bin/python3 - "$work/out/$name/ps_workers.csv" "$name" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
seen = [int(r["pushes_at_first_done"]) for r in rows]
if len(rows) != 7 or any(r["pushes"] != rows[0]["pushes"] for r in rows):
    sys.exit(f"FAIL: {sys.argv[2]}: expected 7 workers with equal pushes, got {[r['pushes'] for r in rows]}")
if 2 * min(seen) < max(seen):
    print(f"FAIL: {sys.argv[2]}: pushes when the first worker finished {seen}: not within a factor 2")
    sys.exit(3)
print(f"{sys.argv[2]}: pushes when the first worker finished {min(seen)} .. {max(seen)}")
PY
}
# Without budgets the 8 ranks share this machine's 2 cores as the kernel happens to place
# them: on 2-core EPYC virtual machines 3 workers often sat on one core and 4 workers and the
# server on the other, and the 4 pushed half as often (osc rdma missed the factor 2 three runs
# in a row inside a full CTest run): a measure of the scheduler, not of the server. With a
# budget per rank (8 emulated hosts' worth of CPU, 1.8 cores in all, so a core falls idle and
# the kernel moves a waiting rank there) the slowest worker had 86 .. 147 pushes in 45 runs
# on a 2-core Zen 3 EPYC (without budgets: 64 .. 135).
# A run that finishes but misses the factor 2 is still run again, up to three runs, and the
# test fails only when all three miss (a run that does not finish fails at once: the
# starvation this test is for).
fair() {  # NAME STEPS MPIRUN...
  local rc=0 try
  for try in 1 2; do
    rc=0
    train "$@" || rc=$?
    [ "$rc" -eq 3 ] || return "$rc"
    echo "$1 missed the factor 2 (run $try of 3): one more run"
  done
  train "$@"
}
rm -rf "$work" && mkdir -p "$work"
case $where in
  localhost)
    source "$src/scripts/cpu_budget.sh"
    budgets=()
    trap 'for cg in "${budgets[@]}"; do cpu_budget_remove "$cg"; done' EXIT
    launch=()
    if cg=$(cpu_budget_make hpdl-fair-r0 0.4 10000); then
      budgets+=("$cg")
      for r in 1 2 3 4 5 6 7; do
        cg=$(cpu_budget_make "hpdl-fair-r$r" 0.2 10000) || { echo "FAIL: no CPU budget for rank $r"; exit 1; }
        budgets+=("$cg")
      done
      # Each rank joins its budget (hpdl-fair-r<rank>, beside the others), then becomes hpdl.
      printf '%s\n' '#!/bin/sh' \
        "echo \$\$ >\"$(dirname "$cg")/hpdl-fair-r\$OMPI_COMM_WORLD_RANK/cgroup.procs\" || exit 1" \
        'exec "$@"' >"$work/in_budget.sh"
      chmod +x "$work/in_budget.sh"
      launch=("$work/in_budget.sh")
    else
      echo "no cgroup cpu controller: the ranks share this machine's cores without budgets"
    fi
    for osc in pt2pt rdma ucx; do
      fair "local_$osc" 150 mpirun --oversubscribe --bind-to none --mca osc "$osc" -np 8 "${launch[@]}"
    done ;;
  cluster)
    source "$src/tests/jobs/netns_lib.sh"
    netns_test_setup "$work"  # (enters $work: the config's data paths are relative to $src)
    cd "$src"
    if [ ! -f /sys/fs/cgroup/cpu/cgroup.procs ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
      skip "no cgroup cpu controller for the hosts' CPU budgets"
    fi
    $cluster up 8 --rate 100mbit --cpus-per-host 0.25 >/dev/null
    fair cluster_100mbit 60 $cluster mpirun -np 8 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 ;;
  *) echo "usage: ps_fairness.sh SOURCE_DIR HPDL WORK_DIR localhost|cluster" >&2; exit 2 ;;
esac
echo "PASS"
