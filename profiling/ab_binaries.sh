#!/usr/bin/env bash
# Two hpdl binaries side by side (before/after a change): each preset is trained by A and B
# alternately, ROUNDS times, on the same data and threads, and the table gives each one's
# median seconds per epoch (epochs 2..E of metrics.csv) and B's speed relative to A.
# Alternating in one run is what makes a ratio trustworthy on a noisy machine.
# Usage: profiling/ab_binaries.sh A_HPDL B_HPDL [ROUNDS] [EPOCHS]   (defaults 5, 3)
#        PRESETS="har_2x2:2 mlp_fashion_mnist:1" picks presets and rank counts;
#        A_SET="key=value ..." / B_SET=... add config overrides to A's / B's runs (one binary
#        against itself: A_SET="distributed.shared_memory=false" ab_binaries.sh build/hpdl build/hpdl).
# e.g.   git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build && \
#        cmake --build /tmp/old/build --target hpdl && \
#        profiling/ab_binaries.sh /tmp/old/build/hpdl build/hpdl
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
a=$1 b=$2 rounds=${3:-5} epochs=${4:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
epoch_s() {  # BINARY PRESET RANKS [--set ...]
  local bin=$1 preset=$2 np=$3
  shift 3
  # One thread a rank at least (more ranks than cores share them).
  mpirun -np "$np" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$((cores / np > 0 ? cores / np : 1)) "$bin" train \
    "inputs/$preset.toml" --set train.epochs="$epochs" --set data.test_file='""' \
    --set run.name=ab --set run.output_dir="\"$out\"" --set train.progress=false --overwrite "$@" \
    >/dev/null
  /usr/bin/python3 profiling/hpdl_runs.py mean "$out/ab/metrics.csv" epoch_s --from-row 2
}
# A_SET / B_SET: one --set per key=value.
a_set=() b_set=()
for kv in ${A_SET:-}; do a_set+=(--set "$kv"); done
for kv in ${B_SET:-}; do b_set+=(--set "$kv"); done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
cpu_line
printf '%-28s %12s %12s %10s\n' "preset (ranks)" "A s/epoch" "B s/epoch" "B vs A"
for spec in ${PRESETS:-har_2x2:1 har_2x2:2 lenet_fashion_mnist:1 lenet_fashion_mnist:2 mlp_fashion_mnist:2}; do
  preset=${spec%:*} np=${spec#*:}
  ta=() tb=()
  for _ in $(seq "$rounds"); do
    ta+=("$(epoch_s "$a" "$preset" "$np" "${a_set[@]}")")
    tb+=("$(epoch_s "$b" "$preset" "$np" "${b_set[@]}")")
  done
  ma=$(printf '%s\n' "${ta[@]}" | median) mb=$(printf '%s\n' "${tb[@]}" | median)
  printf '%-28s %12.3f %12.3f %9.2fx\n' "$preset ($np)" "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print a / b}')"
done
echo "(B vs A > 1: B is faster; medians of $rounds alternating runs of $epochs epochs, $cores threads in all)"
