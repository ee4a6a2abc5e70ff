#!/usr/bin/env bash
# The seeds' scaling table (003: seconds per MNIST epoch of the MLP at 4/8/12 nodes,
# Downpour vs DC-ASGD; here sync as well) on the emulated cluster (scripts/netns_cluster.sh)
# at one link rate: the MLP on Fashion-MNIST (60000 rows, batch 32) on H hosts x 1 rank,
# synchronous (global batch 32 split over H ranks), Downpour and DC-ASGD (1 server on host
# 1, a worker with its own batch 32 on each other host). Each run trains STEPS steps with
# the profiler on; a step is the median of the recorded ones (sync: the slowest rank's;
# parameter server: a worker's), and the epoch time is that step times the steps an epoch
# takes (sync 60000 / 32; parameter server 60000 / (32 W) per worker, workers in parallel)
# — an extrapolation from STEPS steps, not a timed epoch. The machine's 2 cores are shared
# by all emulated hosts, so points with more ranks than cores are oversubscribed (marked).
# A run that fails or stalls (run.watchdog_s = WATCHDOG_S, default 120) gets a row saying so.
#   RATE=100mbit HOSTS="2 4 8" STEPS=40 profiling/bench_scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-100mbit}
hosts_list=${HOSTS:-2 4 8}
steps=${STEPS:-40}
watchdog=${WATCHDOG_S:-120}  # a run that stalls this long ends (named in its row)
rows=60000 batch=32
source profiling/cluster_env.sh hpdl-scaling
n_hosts=$(printf '%s\n' $hosts_list | sort -n | tail -1)
$cluster up "$n_hosts" --rate "$rate" >/dev/null
median_step() { /usr/bin/python3 profiling/median_step.py "$1" "$2"; }  # RUN_DIR SERVERS -> seconds
printf '%-6s %-10s %8s %10s %12s %10s\n' hosts mode workers "step ms" "s/epoch" "samples/s"
for h in $hosts_list; do
  for mode in sync downpour dcasgd; do
    s=0 mode_args=()
    if [ "$mode" != sync ]; then
      s=1 mode_args=(--set "distributed.mode=\"$mode\"" --set 'optimizer.name="sgd"')
      [ "$h" -gt 1 ] || continue
    fi
    echo "$mode on $h host(s) ..." >&2
    if ! $cluster mpirun -np "$h" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
      inputs/mlp_fashion_mnist.toml "${mode_args[@]}" --set run.output_dir="\"$work/runs\"" \
      --set run.name="\"${mode}_$h\"" --set train.max_steps="$steps" --set train.epochs=1000 \
      --set profile.enabled=true --set profile.skip=3 --set profile.warmup=0 --set profile.active="$steps" \
      --set train.progress=false --set 'data.test_file=""' --set run.watchdog_s="$watchdog" \
      --overwrite >"$work/${mode}_$h.log" 2>&1; then
      printf '%-6s %-10s %8s  did not finish: %s\n' "$h" "$mode" "$((h - s))" \
        "$(grep -m1 'hpdl: error' "$work/${mode}_$h.log" | cut -c1-160)"
      continue
    fi
    step=$(median_step "$work/runs/${mode}_$h" "$s")
    w=$((h - s))
    /usr/bin/python3 - "$h" "$mode" "$w" "$step" "$rows" "$batch" "$(nproc)" <<'PY'
import math, sys
h, mode, w, step, rows, batch, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
steps = math.ceil(rows / batch) if mode == "sync" else math.ceil(rows / (batch * w))
epoch = steps * step
note = f"  (oversubscribed: {h} ranks on {cores} cores)" if int(h) > cores else ""
print(f"{h:<6} {mode:<10} {w:>8} {1e3*step:>10.2f} {epoch:>12.1f} {rows/epoch:>10.0f}{note}")
PY
  done
done
