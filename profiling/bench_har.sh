#!/usr/bin/env bash
# Seconds per epoch of the HAR residual bidirectional LSTM, hpdl vs the current PyTorch
# (PyPI's, profiling/peers/requirements.txt), side by side in one run on the UCI HAR data
# (data/uci-har-subset.h5, made by scripts/setup.sh): same architecture, batch 100, Adam,
# L2, clipping, same total thread count. PyTorch runs eager (its LSTM on oneDNN's rnn
# primitive) and under torch.compile; hpdl's speed-up is against the faster. hpdl's time
# is the mean of epochs 2..E from metrics.csv; PyTorch's the mean of E epochs after a
# warm-up epoch.
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
torch_epoch_s() {  # mode stacked groups hidden
  "$peer_py" profiling/peers/pytorch_har.py --mode "$1" --data data/uci-har-subset.h5 \
    --stacked "$2" --groups "$3" --hidden "$4" --threads "$cores" --epochs "$epochs" |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['epoch_s'])"
}

cpu_line
peer_line
printf '%-16s %-26s %10s %16s\n' "model" "runner" "s/epoch" "vs best torch"
for spec in "har_2x2 2 2 32" "har_2x2 2 2 64" "har_3x3 3 3 32"; do
  read -r preset s k h <<< "$spec"
  eager=$(torch_epoch_s eager "$s" "$k" "$h")
  compiled=$(torch_epoch_s compile "$s" "$k" "$h")
  best=$(awk -v a="$eager" -v b="$compiled" 'BEGIN {print (a < b) ? a : b}')
  label="$preset h$h"
  for mode in eager compile; do
    t=$([ $mode = eager ] && echo "$eager" || echo "$compiled")
    printf '%-16s %-26s %10.2f %16s\n' "$label" "PyTorch $mode, $cores thr" "$t" \
      "$(awk -v t="$t" -v b="$best" 'BEGIN {if (t == b) print "fastest"; else printf "%.2fx\n", b / t}')"
    label=""
  done
  for np in 2 1; do
    e=$(hpdl_epoch_s "$preset" "$h" "$np")
    printf '%-16s %-26s %10.2f %15.2fx\n' "" "hpdl, $np rank$([ $np -gt 1 ] && echo s) x $((cores / np)) thr" "$e" \
      "$(awk -v a="$best" -v b="$e" 'BEGIN {print a / b}')"
  done
done
rm -rf "$out"
