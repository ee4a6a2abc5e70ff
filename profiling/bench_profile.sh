#!/usr/bin/env bash
# The profiler's cost and coverage, measured side by side in one run: the schedule
# alternates recorded and unrecorded steps (warm-up 1, active 1, repeated), so the
# overhead is median(recorded step) / median(unrecorded step) - 1 within the same run.
# LeNet and the HAR 2x2 model train on 2 ranks; AlexNet (batch 64) and VGG-11 (batch 12)
# run under `hpdl time --synthetic --overhead` in one process. Prints one table, then the
# forward/backward tables of AlexNet and VGG-11.
# Usage: profiling/bench_profile.sh [STEPS]   (default 200 steps per training run)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-200}
bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=outputs/bench_profile
mkdir -p "$out"

printf '%-22s %7s %12s %12s %9s %10s %10s %14s %9s\n' model steps "rec. step ms" "unrec. ms" overhead \
  "attr mean" "attr worst" "MiB/1000 steps" "write s"
for spec in "lenet inputs/lenet_fashion_mnist.toml" "har_2x2 inputs/har_2x2.toml"; do
  read -r name config <<< "$spec"
  mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train "$config" \
    --set train.max_steps="$steps" --set train.epochs=100 --set data.test_file='""' \
    --set profile.enabled=true --set profile.warmup=1 --set profile.active=1 --set profile.repeat=0 \
    --set run.output_dir="\"$out\"" --set run.name="$name" --set train.progress=false --overwrite >/dev/null
  python3 - "$out/$name/manifest.json" "$name (2 ranks)" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
per1000 = p["bytes"] / 1048576 / max(p["rank_steps"], 1) * 1000
print(f"{sys.argv[2]:<22} {p['rank_steps']:>7} {p['recorded_step_us']/1e3:>12.2f} "
      f"{p['unrecorded_step_us']/1e3:>12.2f} {100*p['overhead']:>+8.2f}% "
      f"{100*p['attributed_mean']:>9.2f}% {100*p['attributed_min']:>9.2f}% {per1000:>14.2f} "
      f"{p['write_s']:>9.3f}")
PY
done
for spec in "alexnet 4" "vgg11 3"; do
  read -r name n <<< "$spec"
  OMP_NUM_THREADS=$(nproc) build/hpdl time "inputs/$name.toml" --synthetic --overhead -n "$n" \
    --warmup 1 > "$out/$name.txt"
  sed -n 's/^overhead: median iteration \([0-9.]*\) ms recorded vs \([0-9.]*\) ms unrecorded (\([-+0-9.]*\)%).*/\1 \2 \3/p' \
    "$out/$name.txt" | { read -r a b o; printf '%-22s %7s %12s %12s %8s%% %10s\n' "$name (hpdl time)" "$((2 * n))" "$a" "$b" "$o" \
    "$(sed -n 's/.*= \([0-9.]*%\) of the iteration/\1/p' "$out/$name.txt")"; }
done
echo
cat "$out/alexnet.txt" "$out/vgg11.txt"
