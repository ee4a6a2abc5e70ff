#!/usr/bin/env bash
# Sync vs Downpour SGD vs DC-ASGD, side by side on the same model, data, seed, optimizer
# (plain SGD) and rank count: sync on R ranks, the parameter-server modes on 1 server +
# R-1 workers. Models: the Fashion-MNIST MLP and the HAR 2x2 residual LSTM. Writes
# outputs/bench_async/async.csv (one row per run and epoch), summary.md (seconds per
# epoch, final accuracy, time to a fixed accuracy, staleness, push+pull share of worker
# time) and accuracy.png (test accuracy against training time and against epochs), then
# measures the raw RMA operations against hpdl's push and pull (hpdl_bench_rma).
# Usage: profiling/bench_async.sh [RANKS] [MLP_EPOCHS] [HAR_EPOCHS]   (default 4 5 15)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4} mlp_epochs=${2:-5} har_epochs=${3:-15}
bash scripts/setup.sh >/dev/null
dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed" ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-matplotlib >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
out=outputs/bench_async
mkdir -p "$out"

run() {  # model config mode epochs extra...
  local model=$1 config=$2 mode=$3 epochs=$4
  shift 4
  mpirun -np "$ranks" --oversubscribe --bind-to none build/hpdl train "$config" \
    --set distributed.mode="$mode" --set train.epochs="$epochs" --set train.seed=1 \
    --set run.output_dir="\"$out\"" --set run.name="${model}_$mode" --set train.progress=false \
    --overwrite "$@" >/dev/null
  echo "$model $mode: $(grep '^final' "$out/${model}_$mode/log.txt")" >&2
}
for mode in sync downpour dcasgd; do
  run mlp inputs/mlp_fashion_mnist.toml "$mode" "$mlp_epochs"
  run har inputs/har_2x2.toml "$mode" "$har_epochs" --set optimizer.name=sgd \
    --set optimizer.lr=0.05 --set train.batch=32 --set optimizer.clip_norm=15.0
done
/usr/bin/python3 profiling/plot_async.py "$out" mlp:0.84 har:0.85
echo
mpirun -np 2 --oversubscribe --bind-to none build/hpdl_bench_rma 200 4096 55050 "$(
  python3 -c "import json; print(json.load(open('$out/har_downpour/manifest.json'))['parameters'])")" 431080
