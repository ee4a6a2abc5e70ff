#!/usr/bin/env bash
# Checkpoint cost: file size and write time (median of the checkpoints of one run) for
# LeNet and the HAR 4x4 hidden-64 model (Adam: parameters + two moment buffers), and the
# per-step cost of the stop-signal agreement (one MPI_Iallreduce of an int per step,
# checkpoint.on_signal) on the MLP, on vs off in alternating runs.
# Usage: bash profiling/bench_checkpoint.sh [ROUNDS]     (2 ranks; data from scripts/setup.sh)
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpirun="mpirun --oversubscribe --bind-to none -np 2"
out=outputs/bench_checkpoint
mkdir -p $out
common=(--set "run.output_dir=\"$out\"" --set train.progress=false --set data.test_file='""' --overwrite)
printf '%-22s %10s %10s %12s %12s\n' model parameters "file MiB" "write s p50" "write s max"
for spec in "lenet inputs/lenet_fashion_mnist.toml" \
            "har_4x4_h64 inputs/har_4x4.toml --set model.layers.1.hidden=64"; do
  read -r name config extra <<<"$spec"
  # shellcheck disable=SC2086
  $mpirun build/hpdl train $config $extra "${common[@]}" --set run.name="$name" \
    --set checkpoint.every_steps=2 --set train.max_steps=20 >/dev/null
  /usr/bin/python3 - "$out/$name" "$name" <<'PY'
import json, re, statistics, sys
d, name = sys.argv[1], sys.argv[2]
rows = [re.search(r"step (\d+), ([\d.]+) MiB written in ([\d.]+) s", l) for l in open(d + "/log.txt")]
rows = [r for r in rows if r]
w = [float(r.group(3)) for r in rows]
m = json.load(open(d + "/manifest.json"))
print("%-22s %10d %10.2f %12.4f %12.4f" % (name, m["parameters"], float(rows[-1].group(2)),
                                          statistics.median(w), max(w)))
PY
done
echo
echo "stop-signal agreement (MLP, 2 ranks, 1 epoch, $rounds alternating rounds): samples/s"
on=() off=()
for r in $(seq "$rounds"); do
  for flag in true false; do
    $mpirun build/hpdl train inputs/mlp_fashion_mnist.toml "${common[@]}" --set run.name=mlp_$flag \
      --set train.epochs=1 --set checkpoint.on_signal=$flag >/dev/null
    sps=$(/usr/bin/python3 profiling/hpdl_runs.py last "$out/mlp_$flag/metrics.csv" samples_per_s)
    if [ $flag = true ]; then on+=("$sps"); else off+=("$sps"); fi
  done
done
/usr/bin/python3 -c "
import statistics, sys
on = [float(x) for x in '${on[*]}'.split()]; off = [float(x) for x in '${off[*]}'.split()]
a, b = statistics.median(on), statistics.median(off)
print('on_signal=true  median %.0f samples/s  %s' % (a, on))
print('on_signal=false median %.0f samples/s  %s' % (b, off))
print('cost of the agreement: %+.2f%% of throughput' % (100 * (b - a) / b))"
