#!/usr/bin/env bash
# How fairly the parameter server serves many workers: 1 server + (H-1) workers on H
# emulated hosts (scripts/netns_cluster.sh, CPUS_PER_HOST cores each, default this
# machine's cores / H) at each link rate, Downpour, DC-ASGD and adaptive DC-ASGD on the
# Fashion-MNIST MLP for STEPS steps per worker. Prints per run: whether it finished (the
# watchdog ends a starved run after WATCHDOG_S), its wall time, every worker's pushes when
# the first worker had finished (min .. max: equal service gives max/min near 1) and the
# longest single push.
#   RATES="100mbit 1gbit" HOSTS=16 STEPS=100 profiling/bench_ps_fairness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${RATES:-100mbit 1gbit}
hosts=${HOSTS:-16}
steps=${STEPS:-100}
watchdog=${WATCHDOG_S:-120}
source profiling/cluster_env.sh hpdl-fairness
cpus=${CPUS_PER_HOST:-$(awk -v c="$(nproc)" -v h="$hosts" 'BEGIN { printf "%.4g", c / h }')}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $hosts hosts of $cpus core(s), 1 server"
printf '%-8s %-16s %-9s %8s %22s %14s\n' rate mode finished wall_s "pushes at first done" "longest push s"
for rate in $rates; do
  $cluster up "$hosts" --rate "$rate" --cpus-per-host "$cpus" >/dev/null
  for mode in downpour dcasgd dcasgd_adaptive; do
    args=(--set "distributed.mode=\"${mode%_adaptive}\"")
    [ "$mode" = dcasgd_adaptive ] && args+=(--set distributed.dc_adaptive=true)
    name=${mode}_$rate
    t0=$(date +%s.%N)
    rc=0
    $cluster mpirun -np "$hosts" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
      inputs/mlp_fashion_mnist.toml "${args[@]}" --set train.max_steps="$steps" --set train.epochs=1000 \
      --set 'data.test_file=""' --set train.progress=false --set run.watchdog_s="$watchdog" \
      --set run.output_dir="\"$work/runs\"" --set run.name="\"$name\"" --overwrite >"$work/$name.log" 2>&1 || rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if [ "$rc" -ne 0 ]; then
      printf '%-8s %-16s %-9s %8s  %s\n' "$rate" "$mode" "no (rc $rc)" "$wall" \
        "$(grep -m1 'hpdl: error' "$work/$name.log" | cut -c1-120)"
      continue
    fi
    /usr/bin/python3 - "$work/runs/$name/ps_workers.csv" "$rate" "$mode" "$wall" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
seen = [int(r["pushes_at_first_done"]) for r in rows]
longest = max(float(r["max_push_s"]) for r in rows)
print(f"{sys.argv[2]:<8} {sys.argv[3]:<16} {'yes':<9} {sys.argv[4]:>8} {min(seen):>10} .. {max(seen):<9} {longest:>14.3f}")
PY
  done
done
