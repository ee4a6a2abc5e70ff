#!/usr/bin/env bash
# The GPU checks in one bounded run, on a GPU machine after "scripts/gpu_bundle.sh unpack":
# the machine and what the carried hpdl links with; every CUDA test (ctest -R "Cuda|gpu");
# sync SGD on the one GPU with 1 and 2 ranks (the same global batch and seed: the losses of
# every epoch must agree, as on the CPU); then profiling/bench_gpu.sh. Each step has its own
# time limit and its whole output in LOGDIR/STEP.log; its last lines and exit status are
# printed here. The exit status is the number of steps that failed. STEPS (default: all
# six) picks some: machine cuda_tests sync_ranks har_gpu_cpu time_tables bench_gpu;
# har_gpu_cpu trains HAR 2x2 on the GPU and on the CPU (losses within 1 %); time_tables is
# hpdl's per-layer tables of LeNet, AlexNet and HAR 2x2 h128 on the GPU (hpdl time
# --overhead), and HAR's step beside it with its LSTM loops as CUDA graphs of their steps
# (run.kernels.cuda_lstm_sequence = false) and launched step by step (cuda_graphs = false too).
# Usage: [STEPS="..."] scripts/gpu_checks.sh LOGDIR [EPOCHS]   (EPOCHS for bench_gpu.sh, default 3)
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "gpu_checks: usage: gpu_checks.sh LOGDIR [EPOCHS]" >&2; exit 2; }
logs=$1 epochs=${2:-3}
[ -f .gpu/env.sh ] ||
  { echo "gpu_checks: no .gpu/env.sh (scripts/gpu_bundle.sh pack here, unpack there)" >&2; exit 2; }
all_steps="machine cuda_tests sync_ranks har_gpu_cpu time_tables bench_gpu"
steps=${STEPS:-$all_steps}
for s in $steps; do
  [[ " $all_steps " == *" $s "* ]] || { echo "gpu_checks: unknown step '$s' ($all_steps)" >&2; exit 2; }
done
mkdir -p "$logs"
# shellcheck source=/dev/null
source .gpu/env.sh
failed=0
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  echo "== $name"
  timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  tail -n 30 "$logs/$name.log"
  echo "== $name: exit $rc after $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || failed=$((failed + 1))
}
machine() {
  local gpu=(--set 'run.device="gpu"')
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  ldd --version | head -1
  echo "libraries not found:"; ldd build/hpdl | grep 'not found' || echo "  none"
  ldd build/hpdl | grep -E 'cublas|cudart'
  build/hpdl time inputs/mlp_fashion_mnist.toml --synthetic -n 3 --warmup 1 "${gpu[@]}"
}

# LeNet on Fashion-MNIST, 2 epochs, 1 rank then 2 ranks sharing the GPU.
sync_ranks() {
  local out=outputs/gpu_sync n gpu=(--set 'run.device="gpu"')
  for n in 1 2; do
    mpirun --oversubscribe --bind-to none -np $n build/hpdl train inputs/lenet_fashion_mnist.toml \
      "${gpu[@]}" --set train.epochs=2 --set train.progress=false --set run.name="np$n" \
      --set run.output_dir="\"$out\"" --overwrite || return 1
    echo "np $n: epoch seconds $(python3 profiling/hpdl_runs.py mean "$out/np$n/metrics.csv" epoch_s)"
  done
  grep -o '"cuda:[^"]*"' "$out/np2/manifest.json" | sort | uniq -c
  python3 tests/cli/losses_agree.py "$out/np1/metrics.csv" "$out/np2/metrics.csv" 0.01 \
    "1 rank" "2 ranks" --atol 1e-4
}

# HAR 2x2 (LSTMs, CUDA graphs of their time loops) for 2 epochs on the GPU and on the CPU.
har_gpu_cpu() {
  local out=outputs/gpu_har d
  for d in gpu cpu; do
    build/hpdl train inputs/har_2x2.toml --set run.device="\"$d\"" --set train.epochs=2 \
      --set train.progress=false --set run.name=$d --set run.output_dir="\"$out\"" --overwrite \
      >/dev/null || return 1
    echo "$d: epoch seconds $(python3 profiling/hpdl_runs.py mean "$out/$d/metrics.csv" epoch_s)"
  done
  python3 tests/cli/losses_agree.py "$out/cpu/metrics.csv" "$out/gpu/metrics.csv" 0.01 CPU GPU \
    --atol 1e-4
}

time_tables() {
  local gpu=(--set 'run.device="gpu"')
  build/hpdl time inputs/lenet_fashion_mnist.toml --synthetic "${gpu[@]}" -n 50 --warmup 5 --overhead &&
    build/hpdl time inputs/alexnet.toml --synthetic --set train.batch=128 "${gpu[@]}" -n 20 --warmup 3 \
      --overhead &&
    build/hpdl time inputs/har_2x2.toml --synthetic --set model.layers.1.hidden=128 "${gpu[@]}" -n 20 \
      --warmup 3 --overhead &&
    for off in cuda_lstm_sequence "cuda_lstm_sequence cuda_graphs"; do
      echo "with run.kernels.${off// /, } = false:"
      build/hpdl time inputs/har_2x2.toml --synthetic $(printf -- '--set run.kernels.%s=false ' $off) \
        --set model.layers.1.hidden=128 "${gpu[@]}" -n 20 --warmup 3 --no-ceilings |
        grep -E '^(res|loss)' || return 1
    done
}

export -f machine sync_ranks har_gpu_cpu time_tables
for s in $steps; do
  case $s in
    machine) step machine 60 bash -c machine ;;
    cuda_tests) step cuda_tests 150 bash -c 'cd build && ctest -R "Cuda|gpu" --output-on-failure --timeout 100' ;;
    sync_ranks) step sync_ranks 120 bash -c sync_ranks ;;
    har_gpu_cpu) step har_gpu_cpu 120 bash -c har_gpu_cpu ;;
    time_tables) step time_tables 120 bash -c time_tables ;;
    bench_gpu) step bench_gpu 240 profiling/bench_gpu.sh "$epochs" ;;
  esac
done
echo "gpu_checks: $failed step(s) failed"
exit "$failed"
