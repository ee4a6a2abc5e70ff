#!/usr/bin/env bash
# What each kernel mechanism that run.kernels can switch off is worth (issue 61's "keep only
# what pays"): one binary, a preset's training iteration (`hpdl time --synthetic`: forward,
# loss, backward, update) with the mechanism on (the candidate tables' choice) and off (the
# run.kernels setting), alternated ROUNDS times; the table gives the medians of the p50
# iteration and on/off. At 1 x THREADS (a rank with every core) and at 1 x 1 with the batch
# one of RANKS ranks would have (a rank of RANKS x 1, without the allreduce).
#   ROUNDS=3 RANKS=2 bash profiling/bench_mechanisms.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
rounds=${ROUNDS:-3} ranks=${RANKS:-2} hpdl=${HPDL:-build/hpdl}
[ -x "$hpdl" ] || bash scripts/setup.sh >/dev/null
cores=$(nproc)
# name | preset | settings with the mechanism on | settings with it off
mechanisms=(
  "activations kept in the convolution's layout|lenet_fashion_mnist||run.kernels.activations=plain"
  "hpdl's pool on plain activations|lenet_fashion_mnist|run.kernels.activations=plain|run.kernels.activations=plain run.kernels.pool=onednn"
  "NHWC where channel blocks would pad|lenet_fashion_mnist||run.kernels.conv_layout=blocked"
  "AVX2 convolution kernels on a Zen 4|lenet_fashion_mnist||run.kernels.conv_isa=native"
)
iteration_ms() {  # threads batch preset settings...
  local threads=$1 batch=$2 preset=$3
  shift 3
  local sets=(--set "train.batch=$batch")
  for kv in "$@"; do sets+=(--set "$kv"); done
  OMP_NUM_THREADS=$threads "$hpdl" time "inputs/$preset.toml" --synthetic -n 30 --no-ceilings \
    "${sets[@]}" | sed -n 's/.*; iteration [0-9.]* ms (p50 \([0-9.]*\),.*/\1/p'
}
batch_of() { sed -n 's/^batch *= *\([0-9]*\).*/\1/p' "inputs/$1.toml" | head -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu_line
printf '%-46s %-10s %10s %10s %8s\n' "mechanism" "rank" "on ms" "off ms" "on/off"
for m in "${mechanisms[@]}"; do
  IFS='|' read -r name preset on off <<<"$m"
  batch=$(batch_of "$preset")
  for shape in "$cores:$batch:1 x $cores" "1:$((batch / ranks)):$ranks x 1"; do
    IFS=: read -r threads b label <<<"$shape"
    t_on=() t_off=()
    for _ in $(seq "$rounds"); do
      # shellcheck disable=SC2086
      t_on+=("$(iteration_ms "$threads" "$b" "$preset" $on)")
      # shellcheck disable=SC2086
      t_off+=("$(iteration_ms "$threads" "$b" "$preset" $off)")
    done
    a=$(median "${t_on[@]}") o=$(median "${t_off[@]}")
    printf '%-46s %-10s %10.2f %10.2f %7.2fx\n' "$name" "$label" "$a" "$o" \
      "$(awk -v a="$a" -v o="$o" 'BEGIN {print o / a}')"
  done
done
echo "(on/off > 1: the mechanism pays; medians of $rounds alternating p50 iterations of 30, synthetic input)"
