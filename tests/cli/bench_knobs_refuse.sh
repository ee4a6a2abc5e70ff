#!/usr/bin/env bash
# The emulated-cluster benchmarks refuse a bad numeric knob with one line naming it and
# exit 2, before they build, set up a cluster or write anything (MIN_S=2s had been read as 0
# by awk: a run shorter than the budget's period never ran again). Valid values pass the
# same checks. They run in a scratch copy of profiling/, so a check that let a bad value
# through fails on the missing inputs/ (another message) instead of reaching a cluster.
# Usage: bench_knobs_refuse.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/profiling" "$tmp/"
source "$(dirname "$0")/script_refusals.sh"
cd "$tmp"
scaling=profiling/bench_scaling.sh
validate=profiling/validate_predict.sh
expect 'MIN_S="2s" is not a number >= 0' env MIN_S=2s bash $scaling
expect 'HOSTS="1 2 x" is not whole numbers >= 1' env HOSTS="1 2 x" bash $scaling
expect 'STEPS="0" is not whole numbers >= 1' env STEPS=0 bash $scaling
expect 'CPUS_PER_HOST="0" is not a number > 0' env CPUS_PER_HOST=0 bash $scaling
expect 'CPUS_PER_HOST="-1" is not a number >= 0' env CPUS_PER_HOST=-1 bash $scaling
expect 'TARGET="high" is not a number >= 0' env TARGET=high bash $scaling
expect 'WATCHDOG_S="1e3" is not a number >= 0' env WATCHDOG_S=1e3 bash $scaling
expect 'MIN_S="two" is not a number >= 0' env MIN_S=two bash $validate
expect 'PERIOD_US="1.5" is not whole numbers >= 1' env PERIOD_US=1.5 bash $validate
expect 'CORES="0.0" is not a number > 0' env CORES=0.0 bash $validate
expect 'HOSTS="2,4" is not whole numbers >= 1' env HOSTS=2,4 bash $validate
expect 'SPLIT="yes" is not 0 or 1' env MEASURED=x.csv SPLIT=yes bash profiling/validate_recommend.sh
expect 'HOSTS="8x" is not whole numbers >= 1' env MEASURED=x.csv HOSTS=8x bash profiling/validate_recommend.sh
expect 'SPLIT="2" is not 0 or 1' env SPLIT=2 bash profiling/reforecast_grid.sh "$tmp"
expect 'REPEAT="2 3" is not a whole number >= 1' env REPEAT="2 3" bash profiling/validate_grid.sh
expect 'REPEAT="0" is not a whole number >= 1' env REPEAT=0 bash profiling/validate_grid.sh
expect 'BUDGETS="0" is not a number > 0' env BUDGETS="0.25 0" bash profiling/bench_idle_cores.sh
expect 'ROUNDS="two" is not whole numbers >= 1' env ROUNDS=two bash profiling/bench_idle_cores.sh
expect 'MODEL="vgg" is not mlp, lenet or har' env MODEL=vgg bash profiling/bench_idle_cores.sh
expect 'grid_noise.py: usage' /usr/bin/python3 profiling/grid_noise.py "$tmp"
expect "grid_noise.py: $tmp has no cell" /usr/bin/python3 profiling/grid_noise.py "$tmp" "$tmp"
grids=$(mktemp -d)  # two saved grids with no point in common (outside $tmp: see the end)
mkdir -p "$grids/a/cell1" "$grids/b/cell1"
echo "mlp 1gbit 2 0.003 0.003 0.002 0.004 1.0 0.5" >"$grids/a/cell1/table.txt"
echo "har 1gbit 2 0.030 0.030 0.020 0.040 1.0 0.5" >"$grids/b/cell1/table.txt"
expect 'grid_noise.py: the two grids measured no point in common' \
  /usr/bin/python3 profiling/grid_noise.py "$grids/a" "$grids/b"
expect 'repeat_errors.py: usage' /usr/bin/python3 profiling/repeat_errors.py "$grids/a/cell1/table.txt"
expect 'repeat_errors.py: the repeats have no point in common' \
  /usr/bin/python3 profiling/repeat_errors.py "$grids/a/cell1/table.txt" "$grids/b/cell1/table.txt"
# Every reader of the points (profiling/grid_points.py) refuses a line that is not one.
echo "mlp 1gbit 2 0.003 0.003" >"$grids/short"
expect "repeat_errors.py: $grids/short:1: expected 9 fields" \
  /usr/bin/python3 profiling/repeat_errors.py "$grids/short" "$grids/a/cell1/table.txt"
expect "predict_errors.py: $grids/short:1: expected 9 fields" \
  /usr/bin/python3 profiling/predict_errors.py 2 "$grids/short"
printf '\nmlp 1gbit two 0.003 0.003 0.002 0.004 1.0 0.5\n' >"$grids/b/cell1/table.txt"
expect "grid_noise.py: $grids/b/cell1/table.txt:2: hosts is not a whole number" \
  /usr/bin/python3 profiling/grid_noise.py "$grids/a" "$grids/b"
echo "mlp 1gbit 2 0 0.003 0.002 0.004 1.0 0.5" >"$grids/zero"
expect "predict_errors.py: $grids/zero:1: hosts or the measured step is not above 0" \
  /usr/bin/python3 profiling/predict_errors.py 2 "$grids/zero"
expect "predict_errors.py: cannot read $grids/none" /usr/bin/python3 profiling/predict_errors.py 2 "$grids/none"
expect 'predict_errors.py: usage' /usr/bin/python3 profiling/predict_errors.py "$grids/zero"
# Two repeats of one point: measured 3 and 5 ms (median 4), forecast 3 and 5 (median 4):
# no error, a spread of 67 %, the first run inside its range and the second not.
echo "mlp 1gbit 2 0.005 0.005 0.0055 0.006 0.5 0.5" >"$grids/rep2"
out=$(/usr/bin/python3 profiling/repeat_errors.py "$grids/a/cell1/table.txt" "$grids/rep2" 2>&1)
[[ $out == *"median |error| 0.0%, worst 0.0% over 1 points"*"inside its repeat's range in 50% of 2 runs"*"spread median 67%"* ]] ||
  { echo "FAIL: repeat_errors.py on two repeats of one point: $out"; fails=$((fails + 1)); }
rm -rf "$grids"
# Valid values pass: each call below would exit 2 with a line if refused.
out=$(bash -c 'source profiling/knobs.sh; knob_number MIN_S 0; knob_number MIN_S .5
  knob_positive CPUS_PER_HOST 0.25; knob_counts HOSTS " 1 2  4 8 "; knob_counts STEPS 30
  knob_switch SPLIT 0; knob_switch SPLIT 1; knob_count REPEAT 3
  echo passed' 2>&1)
[ "$out" = passed ] || { echo "FAIL: valid knobs refused: $out"; fails=$((fails + 1)); }
[ -z "$(ls -A "$tmp" | grep -v '^profiling$')" ] || { echo "FAIL: a refused call wrote files"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo PASS
exit $((fails > 0))
