#!/usr/bin/env bash
# Side-by-side training throughput, hpdl vs the current PyTorch (PyPI's, pinned in
# profiling/peers/requirements.txt), on this machine in one run: same model, data (the
# Fashion-MNIST HDF5 files), batch, optimizer and total thread count. PyTorch runs the way
# its users run it: eager, eager with channels-last convolutions (LeNet) and under
# torch.compile; hpdl's ratio is against the fastest of those. Rounds alternate between
# the runners so machine noise hits all; the table shows medians.
# LeNet is measured twice: over its first 150 steps, and over the rest of its second epoch
# (steps 470-750), where Adam's update meets denormal floats (hpdl's CPU backends flush them
# to zero; PyTorch by default does not).
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
torch_rate() {  # mode model batch optimizer lr steps [warm-up steps]
  "$peer_py" profiling/peers/pytorch_train.py --mode "$1" --model "$2" --batch "$3" \
    --optimizer "$4" --lr "$5" --threads "$cores" --steps "$6" --warmup "${7:-20}" \
    --train data/fashion-mnist-train.h5 |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['samples_per_s'])"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

conv_modes="eager channels_last compile" dense_modes="eager compile"
declare -A r
for round in $(seq "$rounds"); do
  echo "round $round/$rounds" >&2
  for mode in $conv_modes; do
    r[lenet_$mode]+=" $(torch_rate "$mode" lenet 128 adam 0.001 150)"
  done
  r[lenet_2x]+=" $(hpdl_rate 2 inputs/lenet_fashion_mnist.toml 150)"
  r[lenet_1x]+=" $(hpdl_rate 1 inputs/lenet_fashion_mnist.toml 150)"
  # Epoch 2 of 469 steps (60000 / 128), cut at step 750: hpdl's last metrics row is its rate.
  for mode in $conv_modes; do
    r[lenet2_$mode]+=" $(torch_rate "$mode" lenet 128 adam 0.001 281 469)"
  done
  r[lenet2_2x]+=" $(hpdl_rate 2 inputs/lenet_fashion_mnist.toml 750)"
  r[lenet2_1x]+=" $(hpdl_rate 1 inputs/lenet_fashion_mnist.toml 750)"
  for mode in $dense_modes; do
    r[mlp_$mode]+=" $(torch_rate "$mode" mlp 32 sgd 0.05 3000)"
  done
  r[mlp_2x]+=" $(hpdl_rate 2 inputs/mlp_fashion_mnist.toml 3000)"
  r[mlp_1x]+=" $(hpdl_rate 1 inputs/mlp_fashion_mnist.toml 3000)"
done

cpu_line
peer_line
printf '%-30s %-26s %10s %14s %7s\n' "model (batch, optimizer)" "runner" "samples/s" "vs best torch" "target"
for m in lenet lenet2 mlp; do
  case $m in
    lenet) label="LeNet (128, Adam), first 150" target=2x modes=$conv_modes ;;
    lenet2) label="LeNet, steps 470-750" target=2x modes=$conv_modes ;;
    mlp) label="MLP 784-64-64-10 (32, SGD)" target=4x modes=$dense_modes ;;
  esac
  best=0 best_mode=""
  for mode in $modes; do
    t=$(median ${r[${m}_$mode]})
    if awk -v t="$t" -v b="$best" 'BEGIN {exit !(t > b)}'; then best=$t best_mode=$mode; fi
  done
  for mode in $modes; do
    t=$(median ${r[${m}_$mode]})
    printf '%-30s %-26s %10.0f %14s %7s\n' "$label" "PyTorch ${mode/_/-}, $cores thr" "$t" \
      "$([ "$mode" = "$best_mode" ] && echo "fastest" || awk -v t="$t" -v b="$best" 'BEGIN {printf "%.2fx", t / b}')" ""
    label=""
  done
  for v in 2x 1x; do
    h=$(median ${r[${m}_$v]})
    np=$([ $v = 2x ] && echo 2 || echo 1)
    printf '%-30s %-26s %10.0f %13.2fx %7s\n' "" "hpdl, $np rank$([ $np -gt 1 ] && echo s) x $((cores / np)) thr" "$h" \
      "$(awk -v h="$h" -v t="$best" 'BEGIN {print h / t}')" "$target"
  done
done
echo "(median of $rounds alternating rounds; raw: $(for k in "${!r[@]}"; do printf '%s:%s; ' "$k" "${r[$k]}"; done))"
rm -rf "$out"
