#!/usr/bin/env bash
# The points of a saved validation grid (`SAVE=DIR profiling/validate_grid.sh`) forecast
# again by an hpdl binary, from the same profiles and calibrations, against the same measured
# runs: a changed forecast model (or range) checked in seconds, without the emulated cluster.
# Prints the table and summary of predict_errors.py, as the grid does.
# Usage: profiling/reforecast_grid.sh DIR [HPDL_BINARY (default build/hpdl)]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: reforecast_grid.sh DIR [HPDL_BINARY]}
hpdl=${2:-build/hpdl}
[ -d "$dir/cell1" ] || { echo "reforecast_grid.sh: $dir has no cell1 (not a SAVE directory of validate_grid.sh)" >&2; exit 2; }
points=$(mktemp)
out=$(mktemp -d)
trap 'rm -rf "$points" "$out"' EXIT
servers() { case $1 in *_downpour | *_dcasgd) echo 1 ;; *) echo 0 ;; esac; }
for cell in "$dir"/cell*; do
  while read -r model rate h measured _ _ _ _ budget; do
    per_host=()
    [ "$budget" != none ] || per_host=(--cores-per-host "$(/usr/bin/python3 -c "print(min(1.0, $(nproc) / $h))")")
    "$hpdl" predict "$cell/runs/${model}_${rate}_profile" --network "$cell/net_$rate.json" --ranks "$h" \
      "${per_host[@]}" --out "$out/p" >/dev/null
    read -r predicted low high < <(/usr/bin/python3 -c "import csv; r = next(csv.DictReader(open('$out/p/prediction.csv'))); print(r['step_s'], r['step_s_low'], r['step_s_high'])")
    inside=$(/usr/bin/python3 profiling/median_step.py "$cell/runs/${model}_${rate}_$h" "$(servers "$model")" inside "$low" "$high")
    echo "$model $rate $h $measured $predicted $low $high $inside $budget" >>"$points"
  done <"$cell/table.txt"
done
/usr/bin/python3 profiling/predict_errors.py "$(nproc)" "$points"
