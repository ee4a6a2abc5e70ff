#!/usr/bin/env bash
# hpdl predict --recommend against measured epochs: on the emulated cluster of HOSTS hosts
# with a CPU budget each (as profiling/bench_scaling.sh runs it), calibrate once, profile
# MODEL on one rank of this machine, run --recommend for 1, 2, 4, ... HOSTS ranks, and compare, among the
# candidates bench_scaling.sh measured (its scaling.csv, MEASURED), the predicted fastest
# with the measured fastest: the pick's measured seconds per epoch against the best
# measured (the target: within 10 %), and each measured point's prediction error.
#   MODEL=lenet_fashion_mnist MEASURED=outputs/scaling/scaling.csv RATE=100mbit HOSTS=8 \
#     profiling/validate_recommend.sh
set -euo pipefail
cd "$(dirname "$0")/.."
model=${MODEL:-lenet_fashion_mnist}
measured=${MEASURED:?MEASURED=scaling.csv of profiling/bench_scaling.sh}
rate=${RATE:-100mbit}
n_hosts=${HOSTS:-8}
steps=${STEPS:-40}
hpdl=${HPDL:-build/hpdl}
source profiling/cluster_env.sh hpdl-recommend
cpus=${CPUS_PER_HOST:-$(awk -v c="$(nproc)" -v h="$n_hosts" 'BEGIN { printf "%.4g", c / h }')}
$cluster up "$n_hosts" --rate "$rate" --cpus-per-host "$cpus" >/dev/null
echo "calibrating $n_hosts hosts x $cpus core at $rate ..." >&2
$cluster mpirun -np "$n_hosts" --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" calibrate \
  --out "$work/net.json" --max-bytes 8388608 --budget-s 0.5 >"$work/cal.log" 2>&1
# The profile on a whole core of this machine (the budget is the calibration's to state:
# predict scales compute by the calibrated CPU share).
echo "profiling $model on one rank ..." >&2
mpirun -np 1 --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" train "inputs/$model.toml" \
  --set run.output_dir="\"$work/runs\"" --set run.name='"profile"' --set train.max_steps="$steps" \
  --set train.epochs=1000 --set profile.enabled=true --set profile.skip=3 --set profile.warmup=0 \
  --set profile.active="$steps" --set train.progress=false --set 'data.test_file=""' >/dev/null
ranks=1 r=2
while [ "$r" -le "$n_hosts" ]; do ranks=$ranks,$r; r=$((r * 2)); done
"$hpdl" predict "$work/runs/profile" --network "$work/net.json" --ranks "$ranks" --recommend \
  --out "$work/pred" | sed -n '1,14p'
/usr/bin/python3 - "$work/pred/recommend.csv" "$measured" "$rate" <<'PY'
import csv, sys
pred_rows = list(csv.DictReader(open(sys.argv[1])))
meas_rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["rate"] == sys.argv[3]]
names = {"sync": "sync", "sync bf16": "bf16", "diloco H=16": "diloco16", "diloco H=64": "diloco64",
         "local SGD H=16": "local16", "local SGD H=64": "local64", "downpour": "downpour",
         "dcasgd": "dcasgd", "async diloco H=16": "adiloco16", "async diloco H=64": "adiloco64"}
meas = {(r["mode"], int(r["hosts"])): float(r["epoch_s"]) for r in meas_rows}
# The trainer's samples per epoch over predicted samples/s: predicted s/epoch as measured counts it.
pairs = []
for p in pred_rows:
    mode = names.get(p["candidate"])
    if mode and (mode, int(p["ranks"])) in meas:
        pairs.append((p["candidate"], int(p["ranks"]), float(p["epoch_s"]), meas[(mode, int(p["ranks"]))]))
if not pairs:
    sys.exit("no predicted candidate was measured")
print(f"\n{'candidate':16} {'hosts':>5} {'predicted s/epoch':>18} {'measured':>9} {'error':>7}")
for c, h, pe, me in sorted(pairs, key=lambda x: x[3]):
    print(f"{c:16} {h:5d} {pe:18.1f} {me:9.1f} {100 * (pe - me) / me:+6.1f}%")
pick = min(pairs, key=lambda x: x[2])
best = min(pairs, key=lambda x: x[3])
print(f"\npredicted fastest of the measured: {pick[0]} on {pick[1]} hosts, measured {pick[3]:.1f} s/epoch;"
      f" measured fastest: {best[0]} on {best[1]} hosts, {best[3]:.1f} s/epoch"
      f" -> the pick is {100 * (pick[3] / best[3] - 1):.1f} % slower (target <= 10 %)")
PY
