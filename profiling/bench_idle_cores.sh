#!/usr/bin/env bash
# Emulated hosts with a CPU budget, their idle cores halting or kept busy, side by side:
# scripts/netns_cluster.sh with --let-cores-idle (the emulation before 2026-12-06) against
# its default (a spinner of the idle scheduling class on every core). For each budget of
# BUDGETS and host count of HOSTS, MODEL (sync) runs STEPS recorded steps ROUNDS times each
# way, alternated; prints the slowest rank's step (mean, median, 90th percentile, over the
# rounds' steps together) and the CPU seconds a rank spent a step (the ranks' mean user +
# system time over the run, less that of a run of a quarter of the steps, over the steps
# between): what a step costs the budget. On a virtual machine a core idled by a quota for
# most of each period runs the work after each halt slower; a real board computing on its
# own core does not halt.
# Usage: [MODEL=har] [BUDGETS="0.25 0.5"] [HOSTS="1 2"] [STEPS=60] [ROUNDS=2]
#        profiling/bench_idle_cores.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/knobs.sh
model=${MODEL:-har} budgets=${BUDGETS:-0.25 0.5} hosts_list=${HOSTS:-1 2}
steps=${STEPS:-60} rounds=${ROUNDS:-2}
for b in $budgets; do knob_positive BUDGETS "$b"; done
knob_counts HOSTS "$hosts_list"
knob_counts STEPS "$steps"
knob_counts ROUNDS "$rounds"
case $model in
  mlp) config=inputs/mlp_fashion_mnist.toml ;; lenet) config=inputs/lenet_fashion_mnist.toml ;;
  har) config=inputs/har_2x2.toml ;; *) echo "bench_idle_cores.sh: MODEL=\"$model\" is not mlp, lenet or har" >&2; exit 2 ;;
esac
source profiling/cpu_line.sh
source profiling/cluster_env.sh hpdl-idle
short=$(( steps / 4 > 2 ? steps / 4 : 2 ))
run() {  # NAME HOSTS STEPS -> a rank's user + system CPU seconds (the ranks' mean) on stdout
  local cpu
  cpu=$($cluster mpirun -np "$2" --bind-to none -x OMP_NUM_THREADS=1 /usr/bin/time -f "cpu %U %S" \
    build/hpdl train $config --set run.output_dir="\"$work/runs\"" --set run.name="\"$1\"" \
    --set train.max_steps="$3" --set train.epochs=1000 --set profile.enabled=true --set profile.skip=2 \
    --set profile.warmup=0 --set profile.active="$3" --set train.progress=false --set 'data.test_file=""' \
    --set profile.ceilings=false --overwrite 2>&1 </dev/null | awk '$1 == "cpu" { t += $2 + $3; n++ } END { print n ? t / n : 0 }')
  echo "$cpu"
}
echo "$(cpu_line)"
echo "$model sync, $steps steps x $rounds rounds each way; steps of the slowest rank; CPU: a rank's per step"
printf '%-7s %-6s %-12s %9s %9s %9s %11s\n' budget hosts "idle cores" "mean ms" "p50 ms" "p90 ms" "CPU ms/step"
for b in $budgets; do
  for h in $hosts_list; do
    for way in halt busy; do
      flag=(); [ "$way" = busy ] || flag=(--let-cores-idle)
      $cluster up "$h" --rate 1gbit --cpus-per-host "$b" "${flag[@]}" >/dev/null
      dirs=() cpu_step=()
      for r in $(seq 1 "$rounds"); do
        long=$(run "${b}_${h}_${way}_$r" "$h" "$steps")
        base=$(run "${b}_${h}_${way}_${r}_short" "$h" "$short")
        dirs+=("$work/runs/${b}_${h}_${way}_$r")
        cpu_step+=("$(awk -v l="$long" -v s="$base" -v n=$((steps - short)) 'BEGIN { printf "%.2f", 1e3 * (l - s) / n }')")
      done
      /usr/bin/python3 - "$b" "$h" "$way" "${cpu_step[*]}" "${dirs[@]}" <<'PY'
import csv, statistics, sys
b, h, way, cpu = sys.argv[1:5]
steps = []
for d in sys.argv[5:]:
    by = {}
    for r in csv.DictReader(open(d + "/steps.csv")):
        by.setdefault(r["step"], []).append(float(r["wall_us"]) / 1e3)
    steps += [max(v) for v in by.values()]
steps.sort()
cpus = [float(c) for c in cpu.split()]
print(f"{b:<7} {h:<6} {way:<12} {statistics.mean(steps):9.2f} {statistics.median(steps):9.2f} "
      f"{steps[int(0.9 * (len(steps) - 1))]:9.2f} {statistics.mean(cpus):11.2f}")
PY
    done
  done
done
