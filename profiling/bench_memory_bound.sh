#!/usr/bin/env bash
# The memory-bound passes of a training step against a copy of the same bytes: max pooling
# (LeNet's pool1, batch 128, oneDNN backend and reference), dropout (LeNet's 128 x 500 and
# HAR 2x2's 100 x 128 x 9), the SGD and Adam updates (the MLP's 55050 and LeNet's 1256080
# parameters). Each pass counts the bytes it must move at least; "vs copy" is its time
# over a single-thread memcpy of as many bytes, timed right after it on one thread
# (1.00: at copy speed; 2.00: half of it). Needs build/hpdl_bench_kernels (Google
# Benchmark, built when libbenchmark-dev is installed).
#   profiling/bench_memory_bound.sh [REPETITIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
bench=${BENCH:-build/hpdl_bench_kernels}
[ -x "$bench" ] || { echo "no $bench: cmake --build build --target hpdl_bench_kernels" >&2; exit 1; }
reps=${1:-3}
json=$(mktemp)
trap 'rm -f "$json"' EXIT
OMP_NUM_THREADS=1 "$bench" --benchmark_filter='BM_(MaxPoolPass|DropoutPass|SgdUpdate|AdamUpdate)' \
  --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$json" 2>/dev/null
echo "$(cpu_line); 1 thread; medians of $reps repetitions"
/usr/bin/python3 - "$json" <<'PY'
import json, sys
names = {
    "BM_MaxPoolPass/1/0/1": "max-pool forward, oneDNN backend, NCHW", "BM_MaxPoolPass/1/1/1": "max-pool backward, oneDNN backend, NCHW",
    "BM_MaxPoolPass/1/0/20": "max-pool forward, oneDNN backend, NHWC", "BM_MaxPoolPass/1/1/20": "max-pool backward, oneDNN backend, NHWC",
    "BM_MaxPoolPass/0/0/1": "max-pool forward, reference", "BM_MaxPoolPass/0/1/1": "max-pool backward, reference",
    "BM_DropoutPass/128/500/0": "dropout forward, 128 x 500", "BM_DropoutPass/128/500/1": "dropout backward, 128 x 500",
    "BM_DropoutPass/100/1152/0": "dropout forward, 100 x 128 x 9", "BM_DropoutPass/100/1152/1": "dropout backward, 100 x 128 x 9",
    "BM_SgdUpdate/55050": "SGD update, 55050 parameters", "BM_SgdUpdate/1256080": "SGD update, 1256080 parameters",
    "BM_AdamUpdate/55050": "Adam update, 55050 parameters", "BM_AdamUpdate/1256080": "Adam update, 1256080 parameters",
}
rows = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"]
print(f"| pass | bytes moved | us | GB/s | vs copy |")
print(f"| --- | --- | --- | --- | --- |")
for b in rows:
    name = b["run_name"]
    gbs = b["bytes_per_second"] / 1e9
    us = b["real_time"] if b["time_unit"] == "us" else b["real_time"] / 1e3
    moved = gbs * 1e9 * us * 1e-6
    print(f"| {names.get(name, name)} | {moved / 1e6:.2f} MB | {us:.1f} | {gbs:.2f} | {b['vs_copy']:.2f} |")
PY
