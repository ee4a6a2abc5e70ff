#!/usr/bin/env bash
# Seconds per epoch of the HAR residual bidirectional LSTM, hpdl vs PyTorch, side by side
# in one run on the UCI HAR data (data/uci-har-subset.h5, made by scripts/setup.sh): same
# architecture, batch 100, Adam, L2, clipping, same total thread count. hpdl's time is the
# mean of epochs 2..E from metrics.csv; PyTorch's the mean of E epochs after a warm-up.
# Usage: [HPDL=other/hpdl] profiling/bench_har.sh [EPOCHS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}
source profiling/peer_env.sh
source profiling/cpu_line.sh
hpdl=${HPDL:-build/hpdl}  # HPDL=path/to/other/hpdl measures another build (before/after)

hpdl_epoch_s() {  # preset hidden ranks
  local np=$3
  mpirun -np "$np" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((cores / np)) "$hpdl" train \
    "inputs/$1.toml" --set model.layers.1.hidden="$2" --set train.epochs="$epochs" \
    --set data.test_file='""' --set run.name=bench --set run.output_dir="\"$out\"" \
    --set train.progress=false --overwrite >/dev/null
  /usr/bin/python3 profiling/hpdl_runs.py mean "$out/bench/metrics.csv" epoch_s --from-row 2
}
torch_epoch_s() {  # stacked groups hidden
  LD_PRELOAD=$OPENBLAS /usr/bin/python3 profiling/peers/pytorch_har.py --data data/uci-har-subset.h5 \
    --stacked "$1" --groups "$2" --hidden "$3" --threads "$cores" --epochs "$epochs" |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['epoch_s'])"
}

cpu_line
printf '%-16s %-24s %10s %10s %8s\n' "model" "runner" "s/epoch" "speed-up" "target"
for spec in "har_2x2 2 2 32 10x" "har_2x2 2 2 64 8x" "har_3x3 3 3 32 8x"; do
  read -r preset s k h target <<< "$spec"
  t=$(torch_epoch_s "$s" "$k" "$h")
  printf '%-16s %-24s %10.2f %10s %8s\n' "$preset h$h" "PyTorch, $cores threads" "$t" "1.00x" ""
  for np in 2 1; do
    e=$(hpdl_epoch_s "$preset" "$h" "$np")
    printf '%-16s %-24s %10.2f %9.2fx %8s\n' "" "hpdl, $np ranks x $((cores / np)) thr" "$e" \
      "$(awk -v a="$t" -v b="$e" 'BEGIN {print a / b}')" "$target"
  done
done
rm -rf "$out"
