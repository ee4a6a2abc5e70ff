#!/usr/bin/env bash
# Accuracy and speed of the shipped Fashion-MNIST configs on 2 ranks, as a table: test
# accuracy and weighted F1 after the configured epochs (5), mean seconds per epoch,
# training samples/s and peak RSS per rank (from the run's metrics.csv and manifest.json;
# accuracy and F1 of the model the run kept).
# Usage: profiling/bench_accuracy.sh [RANKS]   (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
threads=$(( $(nproc) / ranks )); [ "$threads" -ge 1 ] || threads=1
out=$(mktemp -d)
for cfg in lenet_fashion_mnist mlp_fashion_mnist; do
  echo "training $cfg on $ranks ranks x $threads threads ..." >&2
  mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=$threads build/hpdl train \
    "inputs/$cfg.toml" --set run.output_dir="\"$out\"" --set train.progress=false >/dev/null
done
/usr/bin/python3 - "$out" <<'PY'
import csv, json, sys, os
out = sys.argv[1]
print(f"\n{'config':24} {'epochs':>6} {'test acc':>9} {'F1':>7} {'s/epoch':>8} {'samples/s':>10}  peak RSS/rank (MiB)")
for cfg in ["lenet_fashion_mnist", "mlp_fashion_mnist"]:
    rows = list(csv.DictReader(open(os.path.join(out, cfg, "metrics.csv"))))
    man = json.load(open(os.path.join(out, cfg, "manifest.json")))
    last = rows[-1]
    final = man["final"]  # the kept model's one test evaluation (or the last epoch's)
    sec = sum(float(r["epoch_s"]) for r in rows) / len(rows)
    sps = sum(float(r["samples_per_s"]) for r in rows) / len(rows)
    rss = " ".join(f"{v:.0f}" for v in man["peak_rss_mib"])
    print(f"{cfg:24} {last['epoch']:>6} {final['test_accuracy']:>9.4f} {final['test_f1']:>7.4f} "
          f"{sec:>8.2f} {sps:>10.0f}  {rss}")
print(f"({man['ranks']} ranks x {man['threads_per_rank']} threads, {man['mpi_library']})")
PY
rm -rf "$out"
