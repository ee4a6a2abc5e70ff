#!/usr/bin/env bash
# hpdl predict validated over a grid of emulated clusters (scripts/netns_cluster.sh): for
# each cell (a CPU budget per host, the host counts, the link rates) validate_predict.sh
# runs every model of MODELS for real and forecasts it; then one table of every point and
# the summary: median and worst |error|, and how often the measured step lies inside the
# forecast's range (points and recorded steps), overall and per budget.
# The default grid is a sample of the full one (3 models x 4 variants x 1-8 hosts x 2 links
# x 4 budgets), cut to what this machine emulates faithfully: hosts x budget <= its cores
# (a budget of 0.25 core up to 8 hosts, 0.5 up to 4, 1 core and unbudgeted up to 2), both
# links at 0.25 core, 1 Gbit elsewhere. A cell is "BUDGET:HOSTS:RATES" (BUDGET "none": no
# quota, the hosts share this machine's cores).
# SAVE=DIR keeps each cell's calibrations, profiles, runs and table in DIR/cellK (K from 1),
# as validate_predict.sh's SAVE does: forecasts can be made again from them (a changed model
# against the same measurements).
# REPEAT=N runs the whole grid N times (calibration, profiles and runs afresh each time; SAVE
# then keeps repeat R in DIR/repR/cellK) and ends with repeat_errors.py's table: each point's
# error is its median forecast against its median measured step, beside the repeats' spread.
# On budgeted hosts one run of a point can move by a third from the next, more than the
# targets' 20 %, so a single repeat cannot judge them there.
# Usage: [MODELS="mlp mlp_bf16 mlp_diloco16 mlp_downpour lenet har"] [STEPS=30] [MIN_S=2] [SAVE=DIR]
#        [GRID="0.25:1 2 4 8:100mbit 1gbit;..."] [REPEAT=1] profiling/validate_grid.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
source profiling/knobs.sh
repeat=${REPEAT:-1}
knob_count REPEAT "$repeat"
models=${MODELS:-mlp mlp_bf16 mlp_diloco16 mlp_downpour lenet har}
grid=${GRID:-0.25:1 2 4 8:100mbit 1gbit;0.5:1 2 4:1gbit;1:1 2:1gbit;none:1 2:1gbit}
tables=$(mktemp -d)
trap 'rm -rf "$tables"' EXIT
start=$(date +%s)
echo "$(cpu_line)"
echo "models: $models; ${STEPS:-30} steps a run, at least ${MIN_S:-2} s by the forecast"
IFS=';' read -ra cells <<<"$grid"
for r in $(seq "$repeat"); do
  save=${SAVE:-}
  [ -z "$save" ] || [ "$repeat" = 1 ] || save=$save/rep$r
  k=0
  for cell in "${cells[@]}"; do
    k=$((k + 1))
    IFS=':' read -r budget hosts rates <<<"$cell"
    echo "repeat $r of $repeat, cell: budget $budget, hosts $hosts, links $rates ($(( $(date +%s) - start )) s so far)" >&2
    quota=()
    [ "$budget" = none ] || quota=(CPUS_PER_HOST="$budget")
    env "${quota[@]}" HOSTS="$hosts" RATES="$rates" MODELS="$models" TABLE_OUT="$tables/rep$r" \
      SAVE="${save:+$save/cell$k}" \
      bash profiling/validate_predict.sh >/dev/null
  done
  [ "$repeat" = 1 ] || { echo; echo "repeat $r:"; }
  /usr/bin/python3 profiling/predict_errors.py "$(nproc)" "$tables/rep$r"
done
[ "$repeat" = 1 ] || { echo; /usr/bin/python3 profiling/repeat_errors.py "$tables"/rep*; }
echo "the grid took $(( $(date +%s) - start )) s"
