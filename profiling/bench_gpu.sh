#!/usr/bin/env bash
# hpdl on one GPU against PyTorch on the same GPU, side by side in one run: same
# architecture, batch, optimizer and precision (fp32, TF32 off on both sides), PyTorch
# eager and with its whole step captured as a CUDA graph. Rows: LeNet on Fashion-MNIST
# (batch 128, Adam), the HAR 2x2 residual BiLSTM at hidden 32 and 128 (batch 100, Adam, L2,
# clipping), AlexNet at batch 128 on synthetic input (SGD). Then hpdl's per-layer table of
# AlexNet and LeNet on the GPU (CUDA-event timing): the share of the step attributed to
# layers, loss and update, and the overhead of per-layer timing (recorded vs unrecorded
# iterations alternating in one run). Targets (issue 13, on an H100): HAR 2x2 h128 step
# <= 1 ms and >= 3x PyTorch's samples/s; LeNet epoch <= 0.3 s; timing overhead <= 2 % with
# >= 98 % attributed.
# Needs a CUDA build of hpdl (scripts/setup.sh on a machine with nvcc) and a Python whose
# torch sees the GPU: PYTHON=..., by default the pinned PyPI peer's (profiling/peer_env.sh)
# where it is installed, else python3 (a GPU machine without network keeps the torch it
# has); the line before the table names the peer's version, CUDA and cuDNN. Without a GPU it stops with hpdl's own
# "no CUDA device" line. On a GPU machine without Debian's libraries: scripts/gpu_bundle.sh,
# then scripts/gpu_checks.sh runs this among the other GPU checks.
# Usage: [HPDL=build/hpdl] [PYTHON=python3] profiling/bench_gpu.sh [EPOCHS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}
peer_py=${HPDL_PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hpdl/torch-peer}/bin/python
[ -x "$peer_py" ] || peer_py=python3
hpdl=${HPDL:-build/hpdl} py=${PYTHON:-$peer_py}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gpu=(--set 'run.device="gpu"')
[ -x "$hpdl" ] || { echo "bench_gpu: no $hpdl (build it first)" >&2; exit 2; }
if ! probe=$("$hpdl" time inputs/mlp_fashion_mnist.toml --synthetic -n 1 --warmup 0 "${gpu[@]}" 2>&1); then
  echo "bench_gpu: $(grep -m1 'error' <<<"$probe")" >&2
  exit 2
fi

# Mean seconds per epoch over epochs 2..E of a one-rank GPU run, and steps per epoch.
hpdl_epoch() {  # config [--set ...]
  local config=$1
  shift
  "$hpdl" train "$config" "${gpu[@]}" --set train.epochs="$epochs" --set data.test_file='""' \
    --set run.name=bench --set run.output_dir="\"$out\"" --set train.progress=false --overwrite \
    "$@" >/dev/null
  echo "$(/usr/bin/python3 profiling/hpdl_runs.py mean "$out/bench/metrics.csv" epoch_s --from-row 2) $(/usr/bin/python3 profiling/hpdl_runs.py last "$out/bench/metrics.csv" steps)"
}
peer() { if [ -n "$1" ]; then echo "PyTorch CUDA graph"; else echo "PyTorch eager"; fi; }
field() { "$py" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
row() {  # model runner s/epoch samples/s step_ms reference_samples/s
  printf '%-22s %-26s %10.4f %12.0f %10.3f %9.2fx\n' "$1" "$2" "$3" "$4" "$5" \
    "$(awk -v a="$4" -v b="$6" 'BEGIN {print a / b}')"
}

"$py" -c 'import torch; print(f"peer: PyTorch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")'
printf '%-22s %-26s %10s %12s %10s %10s\n' model runner s/epoch samples/s "step ms" "vs eager"
# LeNet, Fashion-MNIST (60000 rows), batch 128, Adam 0.001.
n=60000
for graphs in "" --graphs; do
  r=$("$py" profiling/peers/pytorch_train.py --model lenet --train data/fashion-mnist-train.h5 \
    --batch 128 --optimizer adam --lr 0.001 --threads 1 --device cuda --steps 400 $graphs | field samples_per_s)
  [ -n "$graphs" ] || eager=$r
  row "LeNet (128, Adam)" "$(peer "$graphs")" "$(awk -v r="$r" -v n=$n 'BEGIN {print n / r}')" \
    "$r" "$(awk -v r="$r" 'BEGIN {print 128e3 / r}')" "$eager"
done
read -r e steps <<<"$(hpdl_epoch inputs/lenet_fashion_mnist.toml)"
row "" "hpdl (target <= 0.3 s)" "$e" "$(awk -v e="$e" -v n=$n 'BEGIN {print n / e}')" \
  "$(awk -v e="$e" -v s="$steps" 'BEGIN {print 1e3 * e / s}')" "$eager"

# HAR 2x2, UCI HAR subset, batch 100.
for h in 32 128; do
  for graphs in "" --graphs; do
    json=$("$py" profiling/peers/pytorch_har.py --data data/uci-har-subset.h5 --stacked 2 --groups 2 \
      --hidden "$h" --threads 1 --device cuda --epochs "$epochs" $graphs)
    r=$(field samples_per_s <<<"$json")
    [ -n "$graphs" ] || eager=$r
    row "HAR 2x2 h$h (100)" "$(peer "$graphs")" "$(field epoch_s <<<"$json")" "$r" \
      "$(field step_ms <<<"$json")" "$eager"
  done
  read -r e steps <<<"$(hpdl_epoch inputs/har_2x2.toml --set model.layers.1.hidden="$h")"
  row "" "hpdl" "$e" "$(awk -v e="$e" -v s="$steps" 'BEGIN {print 100 * s / e}')" \
    "$(awk -v e="$e" -v s="$steps" 'BEGIN {print 1e3 * e / s}')" "$eager"
done

# AlexNet, batch 128, synthetic input, SGD: per-iteration time (no epoch).
for graphs in "" --graphs; do
  r=$("$py" profiling/peers/pytorch_train.py --model alexnet --batch 128 --optimizer sgd --lr 0.01 \
    --threads 1 --device cuda --steps 30 --warmup 5 $graphs | field samples_per_s)
  [ -n "$graphs" ] || eager=$r
  row "AlexNet (128, synth.)" "$(peer "$graphs")" 0 "$r" \
    "$(awk -v r="$r" 'BEGIN {print 128e3 / r}')" "$eager"
done
"$hpdl" time inputs/alexnet.toml --synthetic --set train.batch=128 "${gpu[@]}" -n 20 --warmup 3 \
  --overhead >"$out/alexnet.txt"
ms=$(sed -n 's/.*iteration \([0-9.]*\) ms (p50.*/\1/p' "$out/alexnet.txt")
row "" "hpdl" 0 "$(awk -v m="$ms" 'BEGIN {print 128e3 / m}')" "$ms" "$eager"

echo
echo "Per-layer timing on the GPU (hpdl time --overhead):"
"$hpdl" time inputs/lenet_fashion_mnist.toml --synthetic "${gpu[@]}" -n 50 --warmup 5 --overhead \
  >"$out/lenet.txt"
for m in alexnet lenet; do
  printf '%-8s %s\n' "$m" "$(grep -E '^loss .* of the iteration' "$out/$m.txt")"
  printf '%-8s %s\n' "" "$(grep -E '^overhead:' "$out/$m.txt")"
done
echo
cat "$out/alexnet.txt"
