#!/usr/bin/env bash
# How large a report page is and how long `hpdl report` takes, against the run it reads: the
# MLP trains RANKS ranks (oversubscribed on this machine) for STEPS steps, every step
# profiled, then `hpdl report` runs 3 times (the median is printed). Prints one table: the
# traces on disk, the page, the spans the timeline kept and the seconds to write the page.
# Usage: profiling/bench_report.sh [RANKS [STEPS]]   (default 16 ranks, 1000 steps)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-16} steps=${2:-1000}
bash scripts/setup.sh >/dev/null
source profiling/cpu_line.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=outputs/bench_report
mkdir -p "$out"
mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
  inputs/mlp_fashion_mnist.toml --set train.max_steps="$steps" --set train.epochs=100 \
  --set train.batch=$((16 * ranks)) --set data.test_file='""' --set profile.enabled=true \
  --set profile.skip=0 --set profile.warmup=0 --set profile.active="$steps" --set profile.repeat=1 \
  --set run.output_dir="\"$out\"" --set run.name=mlp --set train.progress=false --overwrite >/dev/null
times=()
for k in 1 2 3; do
  t0=$(date +%s.%N)
  build/hpdl report "$out/mlp" >/dev/null
  times+=("$(echo "$(date +%s.%N) - $t0" | bc)")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
/usr/bin/python3 - "$out/mlp" "$ranks" "$steps" "$median" <<'PY'
import json, os, re, sys
run, ranks, steps, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
traces = sum(os.path.getsize(os.path.join(run, "trace", f)) for f in os.listdir(os.path.join(run, "trace")))
page = open(os.path.join(run, "report.html")).read()
data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</"))
spans = len(data["timeline"]["spans"])
print(f"{'run':<24} {'traces MB':>10} {'page KB':>8} {'of which data KB':>17} {'timeline spans':>15} {'report s':>9}")
print(f"{'MLP, %d ranks x %d steps' % (ranks, steps):<24} {traces / 1e6:>10.1f} {len(page) / 1e3:>8.0f} "
      f"{len(json.dumps(data)) / 1e3:>17.0f} {spans:>15} {secs:>9.2f}")
PY
cpu_line
