#!/usr/bin/env bash
# The points of a saved validation grid (`SAVE=DIR profiling/validate_grid.sh`) forecast
# again by an hpdl binary, from the same profiles and calibrations, against the same measured
# runs: a changed forecast model (or range) checked in seconds, without the emulated cluster.
# The measured steps are read again from the saved runs (median_step.py). Prints the table and
# summary of predict_errors.py, as the grid does.
# SPLIT=1: each synchronous point is forecast with --batch-profile, a second profile of its
# model at an eighth of its batch, taken here (on the CPU share of the cell's profile) the
# first time and kept beside it (DIR/cellK/runs/M_RATE_small).
# POINTS=FILE also writes the points (validate_grid.sh's lines) to FILE: the repeats of a
# REPEAT grid (DIR/repR) forecast again one by one, then profiling/repeat_errors.py over them.
# Usage: [SPLIT=1] [POINTS=FILE] profiling/reforecast_grid.sh DIR [HPDL_BINARY (default build/hpdl)]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: reforecast_grid.sh DIR [HPDL_BINARY]}
hpdl=${2:-build/hpdl}
split_on=${SPLIT:-0}
source profiling/knobs.sh
knob_switch SPLIT "$split_on"
[ -d "$dir/cell1" ] || { echo "reforecast_grid.sh: $dir has no cell1 (not a SAVE directory of validate_grid.sh)" >&2; exit 2; }
points=$(mktemp)
out=$(mktemp -d)
trap 'rm -rf "$points" "$out"' EXIT
servers() { case $1 in *_downpour | *_dcasgd) echo 1 ;; *) echo 0 ;; esac; }
# The second profile of a synchronous point's model (SPLIT=1): its config at an eighth of the
# batch, bound to one core where the first one was.
small_profile() {  # CELL MODEL RATE -> the --batch-profile option, or nothing
  local run=$1/runs/$2_$3_profile small=$1/runs/$2_$3_small batch bind=none
  [ "$split_on" = 1 ] && [ "$(servers "$2")" = 0 ] || return 0
  if [ ! -d "$small" ]; then
    batch=$(sed -n 's/^batch = \([0-9]*\)$/\1/p' "$run/config.toml")
    /usr/bin/python3 -c "import json, sys; sys.exit(json.load(open('$run/manifest.json'))['cpu']['cores_per_rank'] != 1)" && bind=core
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 --bind-to "$bind" -x OMP_NUM_THREADS=1 \
      "$hpdl" train "$run/config.toml" --set run.output_dir="\"$1/runs\"" --set run.name="\"$2_$3_small\"" \
      --set train.batch=$(( batch / 8 > 0 ? batch / 8 : 1 )) --set train.max_steps=40 \
      --set profile.active=40 --set 'data.test_file=""' </dev/null >/dev/null
  fi
  echo "--batch-profile $small"
}
for cell in "$dir"/cell*; do
  while read -r model rate h _ _ _ _ _ budget; do
    # Measured again from the runs, by validate_predict.sh's rule (a mean under a budget or
    # for local SGD, else a median) and median_step.py's current reading of a step.
    how=median
    case "$budget $model" in none\ *_local* | none\ *_diloco* | [0-9]*) how=mean ;; esac
    measured=$(/usr/bin/python3 profiling/median_step.py "$cell/runs/${model}_${rate}_$h" "$(servers "$model")" $how)
    per_host=()
    [ "$budget" != none ] || per_host=(--cores-per-host "$(/usr/bin/python3 -c "print(min(1.0, $(nproc) / $h))")")
    "$hpdl" predict "$cell/runs/${model}_${rate}_profile" --network "$cell/net_$rate.json" --ranks "$h" \
      "${per_host[@]}" $(small_profile "$cell" "$model" "$rate") --out "$out/p" >/dev/null
    read -r predicted low high < <(/usr/bin/python3 -c "import csv; r = next(csv.DictReader(open('$out/p/prediction.csv'))); print(r['step_s'], r['step_s_low'], r['step_s_high'])")
    inside=$(/usr/bin/python3 profiling/median_step.py "$cell/runs/${model}_${rate}_$h" "$(servers "$model")" inside "$low" "$high")
    echo "$model $rate $h $measured $predicted $low $high $inside $budget" >>"$points"
  done <"$cell/table.txt"
done
/usr/bin/python3 profiling/predict_errors.py "$(nproc)" "$points"
[ -z "${POINTS:-}" ] || cp "$points" "$POINTS"
