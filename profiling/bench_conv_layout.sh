#!/usr/bin/env bash
# The oneDNN convolution's two activation layouts side by side, per conv layer of the
# presets: forward + backward ms with the blocked layout and with NHWC (run.kernels.conv_layout
# forcing each, alternated ROUNDS times, medians of `hpdl time --synthetic`), the faster,
# and what the built-in rule picks (the layout table, kernels/onednn/choices.cpp). ISAS caps oneDNN's instruction set
# (ONEDNN_MAX_CPU_ISA) to measure, on one machine, what an older CPU would run: AVX2 for an
# AVX2-only server.
#   ROUNDS=1 ISAS="AVX512_CORE AVX2" bash profiling/bench_conv_layout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
rounds=${ROUNDS:-1}
isas=${ISAS:-AVX512_CORE AVX2}
hpdl=${HPDL:-build/hpdl}
[ -x "$hpdl" ] || bash scripts/setup.sh >/dev/null
echo "$(cpu_line); 1 process x $(nproc) threads" >&2
# model, then its `hpdl time` settings (the timed iterations come last: the rule's pick
# needs only one)
models=("lenet_fashion_mnist -n 10" "alexnet --warmup 1 --set train.batch=32 -n 2"
  "vgg11 --warmup 1 --set train.batch=8 -n 2")

# "layer fwd+bwd" per conv layer, then "iteration ms" and "choice layer layout" lines.
measure() {  # layout model args...
  local layout=$1 model=$2
  shift 2
  OMP_NUM_THREADS=$(nproc) "$hpdl" time "inputs/$model.toml" --synthetic \
    --set run.kernels.conv_layout="$layout" "$@" --no-ceilings | awk '$2 == "conv2d" {print $1, $3 + $5}
      $2 == "chose" {print "choice", $1, $3}
      /; iteration/ {sub(/.*; iteration /, ""); print "iteration", $1}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for isa in $isas; do
  export ONEDNN_MAX_CPU_ISA=$isa
  printf '\n%s (ONEDNN_MAX_CPU_ISA)\n%-22s %-9s %12s %12s %-8s %-8s\n' "$isa" "model" "layer" \
    "blocked ms" "nhwc ms" "faster" "rule"
  for m in "${models[@]}"; do
    set -- $m
    declare -A B=() N=() R=()
    for r in $(seq "$rounds"); do
      while read -r k v; do B[$k]+=" $v"; done < <(measure blocked "$@" | grep -v '^choice')
      while read -r k v; do N[$k]+=" $v"; done < <(measure nhwc "$@" | grep -v '^choice')
    done
    args=("$@")
    while read -r _ layer pick; do R[$layer]=$pick; done < <(measure auto "${args[@]:0:$#-1}" 1 | grep '^choice')
    for k in $(printf '%s\n' "${!B[@]}" | sort -V); do
      b=$(median ${B[$k]}) n=$(median ${N[$k]})
      faster=$(awk -v b="$b" -v n="$n" 'BEGIN {print (b <= n ? "blocked" : "nhwc")}')
      [ "$k" = iteration ] && faster="" && R[$k]="(whole iteration)"
      printf '%-22s %-9s %12.2f %12.2f %-8s %-8s\n' "$1" "$k" "$b" "$n" "$faster" "${R[$k]:-}"
    done
    unset B N R
  done
done
