#!/usr/bin/env bash
# hpdl predict --recommend against measured epochs: on the emulated cluster of HOSTS hosts
# with a CPU budget each (as profiling/bench_scaling.sh runs it), calibrate once, profile
# MODEL on one rank of this machine, run --recommend for 1, 2, 4, ... HOSTS ranks, and
# compare, among the candidates bench_scaling.sh measured (its scaling.csv, MEASURED), the
# pick as --recommend makes it (of the lowest accuracy risk, the fewest hosts within 5 % of
# the fastest) with the measured fastest: the pick's measured seconds per epoch against the
# best measured (the target: within 10 %), and each measured point's prediction error. The
# model is profiled twice, at its batch and at the largest host count's share (SPLIT=0: once).
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
split_on=${SPLIT:-1}
source profiling/knobs.sh
knob_counts HOSTS "$n_hosts"
knob_counts STEPS "$steps"
knob_switch SPLIT "$split_on"
source profiling/cluster_env.sh hpdl-recommend
cpus=${CPUS_PER_HOST:-$(awk -v c="$(nproc)" -v h="$n_hosts" 'BEGIN { printf "%.4g", c / h }')}
$cluster up "$n_hosts" --rate "$rate" --cpus-per-host "$cpus" >/dev/null
echo "calibrating $n_hosts hosts x $cpus core at $rate ..." >&2
$cluster mpirun -np "$n_hosts" --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" calibrate \
  --out "$work/net.json" --max-bytes 8388608 --budget-s 0.5 >"$work/cal.log" 2>&1
# The profile on a whole core of this machine (the budget is the calibration's to state:
# predict scales compute by the calibrated CPU share).
echo "profiling $model on one rank ..." >&2
profile() {  # RUN_NAME [--set ...]: STEPS recorded steps on one rank, whole core
  mpirun -np 1 --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" train "inputs/$model.toml" \
    --set run.output_dir="\"$work/runs\"" --set run.name="\"$1\"" --set train.max_steps="$steps" \
    --set train.epochs=1000 --set profile.enabled=true --set profile.skip=3 --set profile.warmup=0 \
    --set profile.active="$steps" --set train.progress=false --set 'data.test_file=""' "${@:2}" >/dev/null
}
profile profile
# And at the largest count's share of the batch (--batch-profile: a layer's cost per call is
# measured, not assumed to shrink with the batch); SPLIT=0 leaves it out (the A/B).
split=()
if [ "$split_on" = 1 ]; then
  batch=$(sed -n 's/^batch *= *\([0-9]*\).*/\1/p' "inputs/$model.toml")
  profile small --set train.batch=$(( batch / n_hosts > 0 ? batch / n_hosts : 1 ))
  split=(--batch-profile "$work/runs/small")
fi
ranks=1 r=2
while [ "$r" -le "$n_hosts" ]; do ranks=$ranks,$r; r=$((r * 2)); done
"$hpdl" predict "$work/runs/profile" --network "$work/net.json" --ranks "$ranks" --recommend \
  "${split[@]}" --out "$work/pred" | sed -n '1,14p'
# The same forecast without the second profile, for the error column beside it.
"$hpdl" predict "$work/runs/profile" --network "$work/net.json" --ranks "$ranks" --recommend \
  --out "$work/pred_linear" >/dev/null
/usr/bin/python3 - "$work/pred/recommend.csv" "$work/pred_linear/recommend.csv" "$measured" "$rate" <<'PY'
import csv, sys
names = {"sync": "sync", "sync bf16": "bf16", "diloco H=16": "diloco16", "diloco H=64": "diloco64",
         "local SGD H=16": "local16", "local SGD H=64": "local64", "downpour": "downpour",
         "dcasgd": "dcasgd", "async diloco H=16": "adiloco16", "async diloco H=64": "adiloco64"}
linear = {(r["candidate"], r["ranks"]): float(r["epoch_s"]) for r in csv.DictReader(open(sys.argv[2]))}
meas = {(r["mode"], int(r["hosts"])): float(r["epoch_s"])
        for r in csv.DictReader(open(sys.argv[3])) if r["rate"] == sys.argv[4]}
# The trainer's samples per epoch over predicted samples/s: predicted s/epoch as measured counts
# it. Each pair: candidate, hosts, predicted, measured, risk tier (--recommend's: none and low
# first), predicted without the second profile.
pairs = []
for p in csv.DictReader(open(sys.argv[1])):
    mode = names.get(p["candidate"])
    if mode and (mode, int(p["ranks"])) in meas:
        pairs.append((p["candidate"], int(p["ranks"]), float(p["epoch_s"]), meas[(mode, int(p["ranks"]))],
                      {"none": 0, "low": 0, "medium": 1}.get(p["risk"], 2), linear[(p["candidate"], p["ranks"])]))
if not pairs:
    sys.exit("no predicted candidate was measured")
print(f"\n{'candidate':16} {'hosts':>5} {'predicted s/epoch':>18} {'measured':>9} {'error':>7} {'without --batch-profile':>24}")
for c, h, pe, me, _, pl in sorted(pairs, key=lambda x: x[3]):
    print(f"{c:16} {h:5d} {pe:18.1f} {me:9.1f} {100 * (pe - me) / me:+6.1f}% {100 * (pl - me) / me:+23.1f}%")
def verdict(what, pick, among):
    best = min(among, key=lambda x: x[3])
    print(f"{what}: {pick[0]} on {pick[1]} hosts, measured {pick[3]:.1f} s/epoch; measured fastest"
          f" {best[0]} on {best[1]} hosts, {best[3]:.1f} s/epoch -> {100 * (pick[3] / best[3] - 1):.1f} % slower"
          " (target <= 10 %)")
print()
# The forecast's ranking: the fastest predicted against the fastest measured, of all.
verdict("predicted fastest of the measured", min(pairs, key=lambda x: x[2]), pairs)
# --recommend's pick, as it makes it: of the lowest accuracy risk, the fewest hosts within 5 %
# of the fastest predicted; against the fastest measured of that risk.
tier = min(x[4] for x in pairs)
low = [x for x in pairs if x[4] == tier]
fastest = min(x[2] for x in low)
verdict("--recommend's pick (lowest risk) of the measured",
        min((x for x in low if x[2] <= 1.05 * fastest), key=lambda x: (x[1], x[2])), low)
PY
