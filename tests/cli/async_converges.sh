#!/usr/bin/env bash
# Sync (4 ranks), Downpour (1 server + 3 workers) and DC-ASGD (2 servers + 2 workers, and
# adaptive lambda with 1 + 3), and with DILOCO_H set asynchronous DiLoCo (1 server + 3
# workers pushing every DILOCO_H steps: the server's rounds of 3 pushes) train the same
# model on the same data and seed; each
# parameter-server run must come within TOL of sync's test accuracy and above FLOOR, record
# staleness > 0 and write its per-worker files. Accuracy here is the best of the last
# three epochs, since a small test set moves by a few points from epoch to epoch.
# Usage: async_converges.sh MPIRUN HPDL CONFIG OUTDIR TOL FLOOR [--set k=v ...]
# Skips (exit 77) when the config's data files have not been prepared (scripts/setup.sh).
set -eu
source "$(dirname "$0")/../support/skip.sh"
mpirun="$1 --oversubscribe --bind-to none" hpdl=$2 config=$3 out=$4 tol=$5 floor=$6
shift 6
for f in $(sed -n 's/^\(train\|test\)_file = "\(.*\)"/\2/p' "$config"); do
  [ -f "$f" ] || skip "$f is missing (run scripts/setup.sh)"
done
run() {  # name np extra-args...
  local name=$1 np=$2
  shift 2
  $mpirun -np "$np" "$hpdl" train "$config" "$@" --set run.output_dir=\""$out"\" \
    --set run.name="$name" --set train.progress=false --overwrite > "$out.$name.log" 2>&1 ||
    { cat "$out.$name.log"; echo "FAIL: $name"; exit 1; }
  grep '^final' "$out/$name/log.txt"
}
mkdir -p "$out"
run sync 4 "$@"
run downpour 4 "$@" --set distributed.mode=downpour
run dcasgd 4 "$@" --set distributed.mode=dcasgd --set distributed.servers=2
run dcasgd_adaptive 4 "$@" --set distributed.mode=dcasgd --set distributed.dc_adaptive=true
checked="downpour:3 dcasgd:2 dcasgd_adaptive:3"
if [ -n "${DILOCO_H:-}" ]; then
  run async_diloco 4 "$@" --set distributed.mode=downpour --set distributed.n_fetch="$DILOCO_H" \
    --set distributed.n_push="$DILOCO_H" --set distributed.outer=nesterov
  checked="$checked async_diloco:3"
fi
python3 - "$out" "$tol" "$floor" $checked <<'PY'
import csv, json, sys
out, tol, floor = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
checked = [(a.split(":")[0], int(a.split(":")[1])) for a in sys.argv[4:]]
def final(name):
    return json.load(open(f"{out}/{name}/manifest.json"))
def accuracy(name):
    rows = list(csv.DictReader(open(f"{out}/{name}/metrics.csv")))
    return max(float(r["test_accuracy"]) for r in rows[-3:])
sync = accuracy("sync")
bad = []
for name, workers in checked:
    m = final(name)
    acc, ps = accuracy(name), m["parameter_server"]
    print(f"{name}: accuracy {acc:.4f} (sync {sync:.4f}), staleness mean "
          f"{ps['staleness_mean']:.2f} p95 {ps['staleness_p95']}")
    if m["status"] != "complete": bad.append(f"{name}: run not complete")
    if acc < sync - tol: bad.append(f"{name}: accuracy {acc:.4f} is more than {tol} below sync {sync:.4f}")
    if acc < floor: bad.append(f"{name}: accuracy {acc:.4f} < {floor}")
    if not ps["staleness_mean"] > 0: bad.append(f"{name}: no staleness recorded")
    rows = list(csv.DictReader(open(f"{out}/{name}/ps_workers.csv")))
    if len(rows) != workers: bad.append(f"{name}: ps_workers.csv has {len(rows)} rows, not {workers}")
    if sum(int(r["pushes"]) for r in rows) != m["final"]["steps"]:
        bad.append(f"{name}: the workers' pushes do not add up to the server's count")
    hist = list(csv.DictReader(open(f"{out}/{name}/staleness.csv")))
    if sum(int(r["pushes"]) for r in hist) != m["final"]["steps"]:
        bad.append(f"{name}: staleness.csv does not count every push")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("PASS")
PY
