#!/usr/bin/env bash
# hpdl predict end to end on one host: calibrate 2 ranks, profile the tiny model, predict
# 1..64 ranks (table and files written); and its refusals, one line each: a run directory
# that is missing or was not profiled, a file that is no network.json, a rank count below 1
# or too small for a parameter-server run's servers, a --batch-profile at the same batch; a
# parameter-server run predicted; a second profile at another batch.
# Usage: predict_inputs.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/predict
expect="bash $(dirname "$0")/expect_error.sh"
rm -rf "$out" && mkdir -p "$out"
run=(--set "run.output_dir=\"$out\"" --set train.epochs=2)
prof=(--set profile.enabled=true --set profile.skip=1 --set profile.active=20)
$mpirun -np 2 "$hpdl" calibrate --out "$out/net.json" --max-bytes 65536 --budget-s 0.1 >/dev/null
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" "${prof[@]}" --set run.name=profiled >/dev/null
"$hpdl" predict "$out/profiled" --network "$out/net.json" --ranks 1,2,4,64 >"$out/predict.txt"
grep -q "^ *64 " "$out/predict.txt" && grep -q "bottleneck" "$out/predict.txt"
# Calibrated on this one host: the forecast for 64 hosts says it cannot speak for them.
grep -q "^note: the calibration measured 1 host and no link between hosts: the forecasts for up to 64 hosts" "$out/predict.txt"
for f in prediction.csv prediction.svg predicted_trace.json; do [ -s "$out/profiled/predict/$f" ]; done
echo "predicted 1, 2, 4, 64 ranks"
# The calibration holds both ranks' compute ceilings; trace summary measures the profiled
# run's passes against them (and refuses a calibration made with --no-compute).
/usr/bin/python3 -c "
import json; k = json.load(open('$out/net.json'))['compute_per_rank']
assert len(k['gemm_flops_per_s']) == 2 and min(k['gemm_flops_per_s']) > 1e8 and min(k['memory_Bps']) > 1e8, k"
"$hpdl" trace summary "$out/profiled" --network "$out/net.json" >"$out/summary.txt"
grep -Eq "^dense1 +forward .* (compute|memory) " "$out/summary.txt"
grep -q "^iteration: .* GFLOP/s" "$out/summary.txt"
$mpirun -np 2 "$hpdl" calibrate --out "$out/net_nc.json" --max-bytes 64 --budget-s 0.05 --no-compute >/dev/null
$expect "net_nc.json holds no compute ceilings" "$hpdl" trace summary "$out/profiled" --network "$out/net_nc.json"
$expect "nope.json: cannot be read" "$hpdl" trace summary "$out/profiled" --network "$out/nope.json"
# A run profiled before the work columns existed: its layers.csv without them is named.
mkdir -p "$out/old" && cp "$out/profiled/steps.csv" "$out/old/"
cut -d, -f1-10 "$out/profiled/layers.csv" >"$out/old/layers.csv"
$expect "old/layers.csv has no work columns" "$hpdl" trace summary "$out/old" --network "$out/net.json"
echo "trace summary against the calibrated ceilings"
# A cluster calibrated with 0.25 core per host: the prediction uses it (a rank computes 4x
# longer than the full-core profile), unless --cores-per-host says otherwise.
/usr/bin/python3 -c "import json; j = json.load(open('$out/net.json')); j['cpu_share_per_rank'] = [0.25 / j['ranks']] * j['ranks']; json.dump(j, open('$out/budget.json', 'w'))"
"$hpdl" predict "$out/profiled" --network "$out/budget.json" --ranks 1 --out "$out/pb" >"$out/predict_budget.txt"
grep -q "cores per host: 0.250, as calibrated" "$out/predict_budget.txt"
"$hpdl" predict "$out/profiled" --network "$out/budget.json" --ranks 1 --cores-per-host 1 --out "$out/pf" >/dev/null
/usr/bin/python3 - "$out/pb/prediction.csv" "$out/pf/prediction.csv" <<'PY'
import csv, sys
budget, full = (float(next(csv.DictReader(open(f)))["compute_s"]) for f in sys.argv[1:])
assert abs(budget / full - 4) < 1e-6, (budget, full)
PY
echo "a calibrated CPU budget of 0.25 core per host: compute 4x the full-core profile's"
# A second profile at batch 4 splits each layer's time into per call and per sample: the
# forecast at 4 ranks (batch 4 each) takes the batch-4 run's times, not a quarter of batch 16's.
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" "${prof[@]}" --set run.name=batch4 --set train.batch=4 >/dev/null
"$hpdl" predict "$out/profiled" --network "$out/net.json" --ranks 4 --out "$out/pl" >/dev/null
"$hpdl" predict "$out/profiled" --network "$out/net.json" --ranks 4 --batch-profile "$out/batch4" --out "$out/ps4" >"$out/split.txt"
grep -q "strong scaling; each call's cost measured at batch 4 as well)" "$out/split.txt"
/usr/bin/python3 - "$out/pl/prediction.csv" "$out/ps4/prediction.csv" <<'PY2'
import csv, sys
linear, split = (float(next(csv.DictReader(open(f)))["compute_s"]) for f in sys.argv[1:])
assert split > linear, (split, linear)
PY2
$expect "--batch-profile $out/profiled: its local batch is 16 as well" \
  "$hpdl" predict "$out/profiled" --network "$out/net.json" --batch-profile "$out/profiled"
$expect "nope/manifest.json: cannot be read" \
  "$hpdl" predict "$out/profiled" --network "$out/net.json" --batch-profile "$out/nope"
echo "a second profile at batch 4: the 4-rank forecast costs each layer's call"

$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=plain >/dev/null
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" "${run[@]}" "${prof[@]}" --set run.name=ps \
  --set distributed.mode=downpour --set optimizer.name=sgd >/dev/null
$expect "nope/manifest.json: cannot be read" "$hpdl" predict "$out/nope" --network "$out/net.json"
$expect "plain/layers.csv not found \(was the run profiled" "$hpdl" predict "$out/plain" --network "$out/net.json"
$expect "profiled/manifest.json: not a network.json of hpdl calibrate" \
  "$hpdl" predict "$out/profiled" --network "$out/profiled/manifest.json"
"$hpdl" predict "$out/ps" --network "$out/net.json" --ranks 2,4,16 >"$out/predict_ps.txt"
grep -q "downpour, 2 rank(s), 1 server(s)" "$out/predict_ps.txt" && grep -q "staleness" "$out/predict_ps.txt"
grep -Eq "^ +16 +15 " "$out/predict_ps.txt"  # 16 ranks: 15 workers
echo "predicted a parameter-server run at 2, 4, 16 ranks"
$expect "--ranks: a run with 1 server\(s\) needs at least 2 ranks" \
  "$hpdl" predict "$out/ps" --network "$out/net.json" --ranks 1
# --recommend: every candidate at 1, 2, 4 ranks ranked, the best with its launch lines.
"$hpdl" predict "$out/profiled" --network "$out/net.json" --ranks 1,2,4 --recommend >"$out/recommend.txt"
grep -q "^best (.*the fewest ranks within 5% of the fastest): .* on [124] ranks" "$out/recommend.txt" && grep -q "mpirun -np [124] --hostfile hosts" "$out/recommend.txt"
[ "$(wc -l <"$out/profiled/predict/recommend.csv")" -eq $((1 + 1 + 11 * 2 + 4 * 2)) ]
$expect "ps is a downpour run: --recommend starts from a profiled synchronous run" \
  "$hpdl" predict "$out/ps" --network "$out/net.json" --recommend
echo "recommended among 15 candidates at 1, 2, 4 ranks"
$expect "--ranks: 0 is not a rank count" "$hpdl" predict "$out/profiled" --network "$out/net.json" --ranks 1,0
echo "PASS"
