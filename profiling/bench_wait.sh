#!/usr/bin/env bash
# run.wait measured side by side: how a waiting rank idles (spinning, or sleeping between its
# tests) on (A) emulated hosts with a CPU budget (scripts/netns_cluster.sh, CPUS_PER_HOST
# cores each, RATE links), the MLP sync on 1, 2, 4 hosts (HOSTS): each step's wall time as
# the slowest rank's, its mean, median and 90th percentile over STEPS recorded steps; and
# (B) this machine's cores, unbudgeted (2 ranks, a core each): the MLP and LeNet, "spin",
# "sleep" and "auto" (the default) alternated ROUNDS times, the median step of each run,
# then the median over rounds. Prints one table per part.
# Usage: [CPUS_PER_HOST=0.125] [RATE=1gbit] [HOSTS="1 2 4"; "": part B only] [STEPS=100]
#        [ROUNDS=3] profiling/bench_wait.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
cpus=${CPUS_PER_HOST:-0.125} rate=${RATE:-1gbit} hosts_list=${HOSTS-1 2 4}
steps=${STEPS:-100} rounds=${ROUNDS:-3}
source profiling/cluster_env.sh hpdl-wait
stats() {  # RUN_DIR -> "mean p50 p90" of the slowest rank's step, ms
  /usr/bin/python3 - "$1" <<'PY'
import csv, statistics, sys
by = {}
for r in csv.DictReader(open(sys.argv[1] + "/steps.csv")):
    by.setdefault(r["step"], []).append(float(r["wall_us"]) / 1e3)
s = sorted(max(v) for v in by.values())
print(f"{statistics.mean(s):.2f} {statistics.median(s):.2f} {s[int(0.9 * (len(s) - 1))]:.2f}")
PY
}
run=(--set train.max_steps="$steps" --set train.epochs=1000 --set profile.enabled=true
  --set profile.skip=3 --set profile.warmup=0 --set profile.active="$steps"
  --set 'data.test_file=""' --set train.progress=false --set profile.ceilings=false --overwrite)
echo "$(cpu_line)"
if [ -n "$hosts_list" ]; then  # HOSTS="": part B only
  n_hosts=$(printf '%s\n' $hosts_list | sort -n | tail -1)
  echo "(A) MLP sync, hosts of $cpus core(s) at $rate, $steps steps: the slowest rank's step"
  printf '%-6s %-6s %9s %9s %9s  %s\n' hosts wait "mean ms" "p50 ms" "p90 ms" "manifest"
  $cluster up "$n_hosts" --rate "$rate" --cpus-per-host "$cpus" >/dev/null
  for h in $hosts_list; do
    for wait in spin auto; do
      name=a_${h}_$wait
      $cluster mpirun -np "$h" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
        inputs/mlp_fashion_mnist.toml "${run[@]}" --set "run.wait=\"$wait\"" \
        --set run.output_dir="\"$work/runs\"" --set run.name="\"$name\"" >"$work/$name.log" 2>&1 ||
        { echo "$h $wait: failed: $(grep -m1 'hpdl: error' "$work/$name.log")"; continue; }
      read -r mean p50 p90 < <(stats "$work/runs/$name")
      printf '%-6s %-6s %9s %9s %9s  %s\n' "$h" "$wait" "$mean" "$p50" "$p90" \
        "$(sed -n 's/.*"wait": "\(.*\)",*/\1/p' "$work/runs/$name/manifest.json")"
    done
  done
  $cluster down >/dev/null
fi
echo "(B) this machine, 2 ranks x 1 thread bound to a core each, unbudgeted: median step ms"
echo "    (median of $rounds rounds); auto: what run.wait's default chose here"
printf '%-8s %9s %9s %7s %9s  %s\n' model spin sleep "ratio" auto "auto chose"
for model in mlp_fashion_mnist lenet_fashion_mnist; do
  declare -A med=()
  for k in $(seq "$rounds"); do
    for wait in spin sleep auto; do
      name=b_${model}_${wait}_$k
      mpirun -np 2 --bind-to core -x OMP_NUM_THREADS=1 build/hpdl train "inputs/$model.toml" "${run[@]}" \
        --set "run.wait=\"$wait\"" --set run.output_dir="\"$work/runs\"" \
        --set run.name="\"$name\"" >"$work/$name.log" 2>&1
      read -r _ p50 _ < <(stats "$work/runs/$name")
      med[$wait]+="$p50 "
    done
  done
  m() { printf '%s\n' $1 | sort -n | sed -n "$(( (rounds + 1) / 2 ))p"; }
  spin=$(m "${med[spin]}") sleep_=$(m "${med[sleep]}") auto=$(m "${med[auto]}")
  printf '%-8s %9s %9s %7s %9s  %s\n' "${model%%_*}" "$spin" "$sleep_" \
    "$(awk -v a="$spin" -v b="$sleep_" 'BEGIN { printf "%.3f", b / a }')" "$auto" \
    "$(sed -n 's/.*"wait": "\(.*\)",*/\1/p' "$work/runs/b_${model}_auto_1/manifest.json")"
  unset med
done
