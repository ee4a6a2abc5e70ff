#!/usr/bin/env bash
# Side-by-side training throughput, hpdl vs PyTorch, on this machine in one run: same
# model, data (the Fashion-MNIST HDF5 files), batch, optimizer and total thread count.
# Rounds alternate between the two so machine noise hits both; the table shows medians.
# LeNet is measured twice: over its first 150 steps, and over the rest of its second epoch
# (steps 470-750), where Adam's update meets denormal floats (hpdl's CPU backends flush them
# to zero; PyTorch by default does not).
# PyTorch is Debian's python3-torch with Debian's OpenBLAS (libopenblas0-openmp) preloaded.
# Usage: [HPDL=other/hpdl] profiling/bench_vs_pytorch.sh [ROUNDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
source profiling/peer_env.sh
source profiling/cpu_line.sh
hpdl=${HPDL:-build/hpdl}  # HPDL=path/to/other/hpdl measures another build (before/after)

# hpdl samples/s over STEPS steps (the rate of the last epoch row in metrics.csv).
# The learning rate stays constant, as in the PyTorch peer (LeNet's config decays it).
hpdl_rate() {  # ranks config steps
  local np=$1 cfg=$2 steps=$3
  mpirun -np "$np" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((cores / np)) "$hpdl" train "$cfg" \
    --set train.max_steps="$steps" --set optimizer.schedule='"constant"' \
    --set data.test_file='""' --set run.name=bench \
    --set run.output_dir="\"$out\"" --set train.progress=false --overwrite >/dev/null
  /usr/bin/python3 profiling/hpdl_runs.py last "$out/bench/metrics.csv" samples_per_s
}
torch_rate() {  # model batch optimizer lr steps [warm-up steps]
  LD_PRELOAD=$OPENBLAS /usr/bin/python3 profiling/peers/pytorch_train.py --model "$1" --batch "$2" \
    --optimizer "$3" --lr "$4" --threads "$cores" --steps "$5" --warmup "${6:-20}" \
    --train data/fashion-mnist-train.h5 |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['samples_per_s'])"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A r
for round in $(seq "$rounds"); do
  echo "round $round/$rounds" >&2
  r[lenet_torch]+=" $(torch_rate lenet 128 adam 0.001 150)"
  r[lenet_2x]+=" $(hpdl_rate 2 inputs/lenet_fashion_mnist.toml 150)"
  r[lenet_1x]+=" $(hpdl_rate 1 inputs/lenet_fashion_mnist.toml 150)"
  # Epoch 2 of 469 steps (60000 / 128), cut at step 750: hpdl's last metrics row is its rate.
  r[lenet2_torch]+=" $(torch_rate lenet 128 adam 0.001 281 469)"
  r[lenet2_2x]+=" $(hpdl_rate 2 inputs/lenet_fashion_mnist.toml 750)"
  r[lenet2_1x]+=" $(hpdl_rate 1 inputs/lenet_fashion_mnist.toml 750)"
  r[mlp_torch]+=" $(torch_rate mlp 32 sgd 0.05 3000)"
  r[mlp_2x]+=" $(hpdl_rate 2 inputs/mlp_fashion_mnist.toml 3000)"
  r[mlp_1x]+=" $(hpdl_rate 1 inputs/mlp_fashion_mnist.toml 3000)"
done

cpu_line
printf '%-28s %-22s %14s %10s %8s\n' "model (batch, optimizer)" "runner" "samples/s" "vs torch" "target"
for m in lenet lenet2 mlp; do
  t=$(median ${r[${m}_torch]})
  case $m in
    lenet) label="LeNet (128, Adam), first 150" target=2x ;;
    lenet2) label="LeNet, steps 470-750" target=2x ;;
    mlp) label="MLP 784-64-64-10 (32, SGD)" target=4x ;;
  esac
  printf '%-28s %-22s %14.0f %10s %8s\n' "$label" "PyTorch, $cores threads" "$t" "1.00x" ""
  for v in 2x 1x; do
    h=$(median ${r[${m}_$v]})
    np=$([ $v = 2x ] && echo 2 || echo 1)
    printf '%-28s %-22s %14.0f %9.2fx %8s\n' "" "hpdl, $np ranks x $((cores / np)) thr" "$h" \
      "$(awk -v h="$h" -v t="$t" 'BEGIN {print h / t}')" "$target"
  done
done
echo "(median of $rounds alternating rounds; raw: $(for k in "${!r[@]}"; do printf '%s:%s; ' "$k" "${r[$k]}"; done))"
rm -rf "$out"
