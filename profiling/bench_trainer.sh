#!/usr/bin/env bash
# Final test accuracy of the shipped presets over several seeds, as a table (issue 16): per
# preset and variant, the final test accuracy of each seed, their mean and spread (max - min,
# in points), the epoch the kept model comes from, and the wall time of a run.
#   profiling/bench_trainer.sh                 the shipped har_2x2 and lenet_fashion_mnist
#   SEEDS="1 2 3" RANKS=2 VARIANTS='har_2x2:shipped: har_2x2:constant:--set optimizer.schedule="constant"' \
#     profiling/bench_trainer.sh
# A variant is PRESET:NAME:OVERRIDES (overrides are --set arguments, spaces separate them).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-1 2 3}
ranks=${RANKS:-2}
variants=${VARIANTS:-"har_2x2:shipped: lenet_fashion_mnist:shipped:"}
bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
threads=$(( $(nproc) / ranks )); [ "$threads" -ge 1 ] || threads=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Variants are separated by spaces before a PRESET: field; overrides use '|' for spaces.
for v in $variants; do
  IFS=: read -r preset name overrides <<<"$v"
  for seed in $seeds; do
    echo "training $preset ($name) seed $seed on $ranks ranks x $threads threads ..." >&2
    # shellcheck disable=SC2086
    mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$threads build/hpdl train \
      "inputs/$preset.toml" --set run.output_dir="\"$out\"" --set run.name="\"${preset}_${name}_$seed\"" \
      --set train.seed=$seed --set train.progress=false ${overrides//|/ } >/dev/null
  done
done
/usr/bin/python3 - "$out" "$seeds" "$variants" "$ranks" "$threads" <<'PY'
import json, os, statistics, sys
out, seeds, variants, ranks, threads = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4], sys.argv[5]
print(f"\n{'preset':20} {'variant':14} {'test accuracy per seed':28} {'mean':>7} {'spread':>7} {'kept epoch':>11} {'wall s':>7}")
for v in variants:
    preset, name, _ = v.split(":", 2)
    acc, epochs, wall = [], [], []
    for s in seeds:
        f = json.load(open(os.path.join(out, f"{preset}_{name}_{s}", "manifest.json")))["final"]
        acc.append(f["test_accuracy"]); epochs.append(f"{f['model_epoch']}/{f['epochs']}"); wall.append(f["elapsed_s"])
    per = " ".join(f"{a:.4f}" for a in acc)
    print(f"{preset:20} {name:14} {per:28} {statistics.mean(acc):7.4f} {100*(max(acc)-min(acc)):6.2f}p "
          f"{' '.join(epochs):>11} {statistics.mean(wall):7.1f}")
print(f"({ranks} ranks x {threads} threads; seeds {' '.join(seeds)}; wall s = training and per-epoch evaluation)")
PY
