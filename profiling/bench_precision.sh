#!/usr/bin/env bash
# run.precision = "bf16" against "f32" on this CPU, side by side in one run:
#  1. the iteration time of `hpdl time --synthetic` for each model (f32 and bf16 alternated
#     ROUNDS times, medians; 1 process x all cores), and the ratio;
#  2. the test accuracy after the same epochs for LeNet on Fashion-MNIST over SEEDS, 2 ranks.
# Needs a CPU with AVX512_BF16 or AMX-BF16 (hpdl refuses bf16 elsewhere, and so does this).
#   ROUNDS=3 TIME_MODELS="lenet_fashion_mnist vgg11" SEEDS="1 2 3" EPOCHS=2 \
#     bash profiling/bench_precision.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
time_models=${TIME_MODELS:-lenet_fashion_mnist vgg11}
acc_model=${ACC_MODEL:-lenet_fashion_mnist}
seeds=${SEEDS:-1 2 3}
epochs=${EPOCHS:-2}
hpdl=${HPDL:-build/hpdl}
[ -x "$hpdl" ] || bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
out=$(mktemp -d /tmp/hpdl-precision.XXXXXX)
trap 'rm -rf "$out"' EXIT
check=$("$hpdl" check "inputs/$acc_model.toml" --set run.precision=\"bf16\" | grep '^backend')
case $check in *"runs here"*) ;; *) echo "bench_precision: $check" >&2; exit 2 ;; esac
flags=$(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $cores cores; $flags" >&2
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

iteration_ms() {  # model precision
  local n=20 extra=()
  [ "$1" = lenet_fashion_mnist ] || { n=3; extra=(--warmup 1); }
  OMP_NUM_THREADS=$cores "$hpdl" time "inputs/$1.toml" --synthetic -n $n "${extra[@]}" --no-ceilings \
    --set run.precision=\"$2\" | sed -n 's/.*; iteration \([0-9.]*\) ms.*/\1/p'
}

printf '\n%-22s %14s %14s %8s\n' "model (synthetic)" "f32 ms/iter" "bf16 ms/iter" "speed-up"
for m in $time_models; do
  f=() b=()
  for r in $(seq "$rounds"); do
    f+=("$(iteration_ms "$m" f32)")
    b+=("$(iteration_ms "$m" bf16)")
  done
  fm=$(median "${f[@]}") bm=$(median "${b[@]}")
  printf '%-22s %14.1f %14.1f %7.2fx\n' "$m" "$fm" "$bm" "$(awk -v a="$fm" -v b="$bm" 'BEGIN {print a / b}')"
done

printf '\n%-22s %-9s %-28s %8s\n' "$acc_model ($epochs ep.)" "precision" "test accuracy per seed" "mean"
for p in f32 bf16; do
  accs=()
  for seed in $seeds; do
    mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((cores / 2 > 0 ? cores / 2 : 1)) \
      "$hpdl" train "inputs/$acc_model.toml" --set train.seed="$seed" --set train.epochs="$epochs" \
      --set run.precision=\"$p\" --set run.name="$p-$seed" --set run.output_dir=\""$out"\" \
      --set train.progress=false --overwrite >/dev/null
    accs+=("$(/usr/bin/python3 profiling/hpdl_runs.py last "$out/$p-$seed/metrics.csv" test_accuracy)")
  done
  printf '%-22s %-9s %-28s %8.4f\n' "" "$p" "${accs[*]}" \
    "$(printf '%s\n' "${accs[@]}" | awk '{s += $1} END {print s / NR}')"
done
