#!/usr/bin/env bash
# Accuracy of the low-communication synchronous variants against plain sync SGD, over
# seeds: test accuracy after the preset's epochs (or EPOCHS), its mean and spread over the
# seeds, the difference to sync, and the payload each rank puts into allreduces per epoch
# (the gradient every step for sync, the parameter change every H steps for local SGD;
# halved by 16-bit compression) computed from the run's parameter count and steps.
# Variants: sync | bf16 | fp16 (compressed gradients) | localH (local SGD, average every H
# steps) | dilocoH (the same with DiLoCo's Nesterov outer step) | localH_bf16 | dilocoH_bf16,
# each of the last four with _wN: N synchronous warm-up steps first (the payload column
# counts the averages only).
# Runs on this machine's ranks (no network emulation: accuracy does not depend on it; see
# profiling/bench_scaling.sh for time per epoch on the emulated cluster).
#   MODELS="mlp_fashion_mnist har_2x2" VARIANTS="sync bf16 local16 diloco16" SEEDS="1 2 3" \
#     RANKS=4 EPOCHS=5 profiling/bench_low_communication.sh
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MODELS:-mlp_fashion_mnist har_2x2}
variants=${VARIANTS:-sync bf16 fp16 local16 diloco16 local64 diloco64}
seeds=${SEEDS:-1 2 3}
ranks=${RANKS:-4}
epochs=${EPOCHS:-}
hpdl=${HPDL:-build/hpdl}
[ -x "$hpdl" ] || bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d /tmp/hpdl-lowcomm.XXXXXX)
trap 'rm -rf "$out"' EXIT
source profiling/variants.sh
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $ranks ranks x 1 thread" >&2
for model in $models; do
  for v in $variants; do
    for seed in $seeds; do
      sets=(--set "train.seed=$seed" --set train.progress=false)
      [ -z "$epochs" ] || sets+=(--set "train.epochs=$epochs")
      while read -r s; do [ -z "$s" ] || sets+=(--set "$s"); done < <(variant_sets "$v")
      echo "$model $v seed $seed ..." >&2
      mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" train \
        "inputs/$model.toml" --set run.output_dir="\"$out\"" --set run.name="\"${model}_${v}_$seed\"" \
        "${sets[@]}" >"$out/${model}_${v}_$seed.log" 2>&1 ||
        { echo "FAILED: $model $v seed $seed"; tail -3 "$out/${model}_${v}_$seed.log"; }
    done
  done
done
/usr/bin/python3 - "$out" "$models" "$variants" "$seeds" <<'PY'
import json, math, os, re, statistics, sys
sys.path.insert(0, "profiling")
import hpdl_runs
out, models, variants, seeds = sys.argv[1], *[a.split() for a in sys.argv[2:]]
print(f"\n{'model':18} {'variant':13} {'test acc (seeds)':26} {'mean':>7} {'vs sync':>8} "
      f"{'MB/epoch/rank':>14} {'vs sync':>8}")
for model in models:
    base = None
    for v in variants:
        accs, payload = [], None
        for s in seeds:
            run = os.path.join(out, f"{model}_{v}_{s}")
            try:
                man = json.load(open(os.path.join(run, "manifest.json")))
                accs.append(man["final"]["test_accuracy"])
                steps = hpdl_runs.column(os.path.join(run, "metrics.csv"), "steps")[0]
            except (OSError, KeyError):
                continue
            m = re.match(r"(local|diloco)(\d+)", v)
            h = int(m.group(2)) if m else 1
            bytes_per = 2 if re.sub(r"_w\d+$", "", v).endswith(("bf16", "fp16")) else 4
            payload = math.ceil(steps / h) * man["parameters"] * bytes_per / 1e6
        if not accs:
            print(f"{model:18} {v:13} failed")
            continue
        mean = statistics.mean(accs)
        if v == "sync":
            base = (mean, payload)
        d = f"{100 * (mean - base[0]):+.2f} pt" if base else ""
        r = f"1/{base[1] / payload:.0f}" if base and payload else ""
        print(f"{model:18} {v:13} {' '.join(f'{a:.4f}' for a in accs):26} {mean:>7.4f} {d:>8} "
              f"{payload:>14.2f} {r:>8}")
PY
