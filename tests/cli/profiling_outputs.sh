#!/usr/bin/env bash
# Profiled runs carry each layer's work (layers.csv: GFLOP and MB per pass, the tiny model's
# dense1 counted by hand) and their efficiency against the ranks' measured ceilings
# (efficiency.csv: dense1's GFLOP/s is its FLOPs over its mean time, its peak share that over
# the manifest's median GEMM peak; the log's efficiency line), and `hpdl compare A B` puts two runs side by side: a run against
# itself changes nothing; two hand-made profiles get the ratios, noise and verdicts worked
# out by hand; its refusals name the file. `hpdl time --csv` writes the efficiency rows, and
# `hpdl time --out DIR` a run directory with its report page.
# Usage: profiling_outputs.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/compare
expect="bash $(dirname "$0")/expect_error.sh"
rm -rf "$out" && mkdir -p "$out"
run=(--set "run.output_dir=\"$out\"" --set train.epochs=1 --set profile.enabled=true
  --set profile.skip=2 --set profile.active=40)
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=a >/dev/null
# dense1 of tiny.toml at its batch: 2 x batch x in x units + batch x units FLOPs forward, and
# batch x units more for the ReLU after it, which it applies.
/usr/bin/python3 - "$out/a" "$fx/tiny.toml" <<'PY'
import csv, sys, tomllib
cfg = tomllib.load(open(sys.argv[2], "rb"))
row = next(r for r in csv.DictReader(open(sys.argv[1] + "/layers.csv")) if r["layer"] == "dense1")
batch, inputs = cfg["train"]["batch"], 1
for d in cfg["model"]["input"]:
    inputs *= d
layers = cfg["model"]["layers"]
k = next(i for i, l in enumerate(layers) if l["type"] == "dense")
units = layers[k]["units"]
# A ReLU right after it (not the model's last layer) is the dense layer's own work: one
# operation per output (Layer::absorb_following_relu).
relu = k + 2 < len(layers) and layers[k + 1]["type"] == "relu"
want = (2 * batch * inputs * units + batch * units + (batch * units if relu else 0)) / 1e9
got = float(row["forward_gflop"])
assert abs(got - want) <= 1e-9 * max(1, want) + 1e-12, (got, want)
assert float(row["backward_mb"]) > 0
print(f"dense1 forward {got * 1e9:.0f} FLOP at batch {batch}, as counted by hand")
import json, statistics
eff = {(r["layer"], r["pass"]): r for r in csv.DictReader(open(sys.argv[1] + "/efficiency.csv"))}
e = eff[("dense1", "forward")]
rate = float(row["forward_gflop"]) / (float(row["forward_mean_us"]) / 1e6)
# Both files print 6 significant digits: the recomputation agrees to about 1e-5.
assert abs(float(e["gflops_per_s"]) - rate) <= 1e-4 * rate, (e["gflops_per_s"], rate)
peak = statistics.median(json.load(open(sys.argv[1] + "/manifest.json"))["ceilings"]["gemm_flops_per_s"])
share = rate * 1e9 / peak
assert peak > 0 and abs(float(e["peak_share"]) - share) <= 1e-4 * share, (e["peak_share"], share)
assert e["bound"] in ("compute", "memory"), e["bound"]
assert any(l.startswith("efficiency: the layers ran") for l in open(sys.argv[1] + "/log.txt")), "no efficiency line"
print(f"dense1 forward {rate:.2f} GFLOP/s = {100 * float(e['peak_share']):.2f} % of the measured peak ({peak / 1e9:.1f} GFLOP/s), {e['bound']}-bound")
PY
"$hpdl" compare "$out/a" "$out/a" >"$out/same.txt"
grep -q "^step (median wall" "$out/same.txt"
if grep -Eq "faster|slower" "$out/same.txt"; then
  echo "a run against itself changed: $(cat "$out/same.txt")" >&2
  exit 1
fi
echo "a run against itself: no change"
# Two hand-made profiles: dense1's forward doubles with spreads of 10 % and 5 % (noise 11.2 %:
# slower); its backward moves 10 % within spreads of 50 % and 45 % (the same); relu1 is
# in B only.
mkdir -p "$out/x" "$out/y"
cols=layer,forward_mean_us,forward_p50_us,forward_p95_us,forward_std_us,backward_mean_us,backward_p50_us,backward_p95_us,backward_std_us,samples
printf '%s\ndense1,100,100,110,1,100,100,150,1,10\n' "$cols" >"$out/x/layers.csv"
printf '%s\ndense1,200,200,210,1,110,110,160,1,10\nrelu1,1,1,1,0,1,1,1,0,10\n' "$cols" >"$out/y/layers.csv"
for d in x y; do head -2 "$out/a/steps.csv" >"$out/$d/steps.csv"; done
"$hpdl" compare "$out/x" "$out/y" >"$out/xy.txt"
cat "$out/xy.txt"
grep -Eq "^dense1 +forward +0\.100 +0\.200 +2\.000 +11\.2% slower +- +-" "$out/xy.txt"
grep -Eq "^dense1 +backward +0\.100 +0\.110 +1\.100 +67\.6% same " "$out/xy.txt"
grep -q "^relu1 .*only in B" "$out/xy.txt"
grep -q "B/A 1.000" "$out/xy.txt"
$expect "nope/layers.csv not found \(was the run profiled" "$hpdl" compare "$out/a" "$out/nope"
echo "compare: ok"
"$hpdl" time "$fx/tiny.toml" -n 2 --csv "$out/eff.csv" >/dev/null
head -1 "$out/eff.csv" | grep -q "^layer,pass,seconds,flops,bytes,gflops_per_s,peak_share,intensity,bound"
[ "$(grep -c "^dense1,forward," "$out/eff.csv")" = 1 ]
$expect "--csv needs the ceilings" "$hpdl" time "$fx/tiny.toml" -n 2 --csv "$out/x.csv" --no-ceilings
# --out: the same timings as a run directory of one rank, with its report page.
"$hpdl" time "$fx/tiny.toml" -n 3 --out "$out/timed" | grep -q "^run directory $out/timed: report $out/timed/report.html$"
for f in manifest.json config.toml layers.csv steps.csv efficiency.csv trace/rank0.json report.html; do
  [ -s "$out/timed/$f" ] || { echo "FAIL: hpdl time --out wrote no $f"; exit 1; }
done
[ "$(grep -c "^dense1,forward," "$out/timed/efficiency.csv")" = 1 ]
grep -q '"kind": "time"' "$out/timed/manifest.json"
$expect "cannot create directory /proc/x" "$hpdl" time "$fx/tiny.toml" -n 2 --no-ceilings --out /proc/x
echo "time --out: ok"
