#!/usr/bin/env bash
# hpdl predict against measured runs on the emulated cluster (scripts/netns_cluster.sh):
# for each link rate, calibrate the cluster once; profile each model on 1 rank; run it for
# real on 1, 2 and 4 hosts (1 rank each, profiled); compare the measured median step time
# (the slowest rank's over its own steps: median_step.py) with the prediction; print one table (measured, predicted, error) and the median and
# worst |error|. Parameter-server models (mlp_downpour, lenet_dcasgd: Downpour or DC-ASGD, 1 server)
# are profiled on 2 ranks of host 1 (a server and a worker) and run on 2 and more hosts (the
# server on host 1, a worker on each other host); their step is a worker's (median over the
# workers' recorded steps: workers do not wait for each other).
# This machine's 2 cores are shared by all emulated hosts: with H hosts of 1 rank x 1 thread
# each rank gets 2/H cores, which the predictor is told (--cores-per-host 2/H); rows with
# H > 2 are marked oversubscribed.
# With CPUS_PER_HOST (e.g. 0.25) every host gets that CPU budget instead (a cgroup quota, as
# bench_scaling.sh runs it): the profile is taken on whole cores of this machine, outside the
# cluster (a parameter-server profile on 2 ranks), predict takes the cores per host from the
# calibration, no point is oversubscribed, and measured steps are means (under a quota a few
# steps absorb the throttled time). PERIOD_US sets the budget's quota period (netns_cluster.sh's
# --period-us, 10000 by default; at least 1 ms of quota per period).
# Each point's forecast comes with its range (prediction.csv's step_s_low/high): the table
# says whether the measured step lies inside it and what share of the recorded steps do.
# Every run lasts at least MIN_S seconds (default 2) by its forecast: STEPS, or more steps where
# the forecast step is short (under a 10 ms quota period, 30 steps of 0.1 ms may meet no
# throttled period).
# TABLE_OUT=FILE appends the points to FILE (profiling/validate_grid.sh collects them).
# SAVE=DIR keeps the calibrations, the profiles, the measured runs and table there, so that the
# predictions can be made again without the cluster (`hpdl predict DIR/runs/M_RATE_profile
# --network DIR/net_RATE.json --ranks H`).
# A model may carry a synchronous variant of profiling/variants.sh as a suffix (mlp_bf16,
# lenet_diloco16, har_local16_bf16): local SGD runs a multiple of H steps and compares mean
# step times (the average lands on one step in H), the others medians.
#   RATES="100mbit 1gbit" MODELS="mlp lenet har mlp_downpour" HOSTS="1 2 4 8" STEPS=30 MIN_S=2 \
#     profiling/validate_predict.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${RATES:-100mbit 1gbit}
models=${MODELS:-mlp lenet}
steps=${STEPS:-30}
hosts_list=${HOSTS:-1 2 4}
cores=${CORES:-$(nproc)}
budget=${CPUS_PER_HOST:-}
min_s=${MIN_S:-2}
save=${SAVE:-}
source profiling/knobs.sh
knob_counts STEPS "$steps"
knob_counts HOSTS "$hosts_list"
knob_positive CORES "$cores"
knob_number MIN_S "$min_s"
[ -z "$budget" ] || knob_positive CPUS_PER_HOST "$budget"
[ -z "${PERIOD_US:-}" ] || knob_counts PERIOD_US "$PERIOD_US"
source profiling/cluster_env.sh hpdl-validate
source profiling/variants.sh
config() {
  local base=${1%%_*} variant=${1#*_} c
  [ "$variant" != "$1" ] || variant=""
  case $base in mlp) c=inputs/mlp_fashion_mnist.toml ;; lenet) c=inputs/lenet_fashion_mnist.toml ;;
    har) c=inputs/har_2x2.toml ;; *) echo "unknown model $1" >&2; exit 2 ;; esac
  case $variant in
    "") ;;
    downpour | dcasgd) c="$c --set distributed.mode=\"$variant\" --set optimizer.name=\"sgd\"" ;;
    *) for v in $(variant_sets "$variant"); do c="$c --set ${v//\"/\\\"}"; done ;;
  esac
  echo "$c"
}
every() { variant_sets "${1#*_}" 2>/dev/null | sed -n 's/^distributed.sync_every=//p'; }
servers() { case $1 in *_downpour | *_dcasgd) echo 1 ;; *) echo 0 ;; esac; }
# Rank 0's batch and the profile: skip 2 steps, record the rest (STEPS, or N where given).
train_args() {  # MODEL NAME [N]
  local n=${3:-$steps} h
  h=$(every "$1")
  [ -z "$h" ] || n=$(( (n > 2 * h ? n + h - 1 : 2 * h) / h * h ))
  echo "$(config "$1") --set run.output_dir=\"$work/runs\" --set run.name=\"$2\" --set train.max_steps=$n
    --set train.epochs=1000 --set profile.enabled=true --set profile.skip=2 --set profile.warmup=0
    --set profile.active=$n --set train.progress=false --set data.test_file=\"\" --overwrite"
}
measured_step() {  # MODEL RUN_DIR SERVERS -> seconds
  /usr/bin/python3 profiling/median_step.py "$2" "$3" \
    $([ -z "$(every "$1")" ] && [ -z "$budget" ] || echo mean)
}
table=$work/table.txt
: >"$table"
# The cluster is as large as the largest point (at least 2 hosts, for a link): a larger one
# would share this machine's cores among hosts that no point runs, and the calibration would
# measure that sharing (its per-host CPU share) for every point.
n_hosts=$(printf '%s\n' $hosts_list 2 | sort -n | tail -1)
$cluster up "$n_hosts" --rate 100mbit ${budget:+--cpus-per-host "$budget"} ${PERIOD_US:+--period-us "$PERIOD_US"} >/dev/null
for rate in $rates; do
  for i in $(seq 1 "$n_hosts"); do $cluster rate "$i" "$rate" >/dev/null; done
  echo "calibrating the $n_hosts-host cluster at $rate ..." >&2
  $cluster mpirun -np "$n_hosts" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 build/hpdl calibrate \
    --out "$work/net_$rate.json" --max-bytes 8388608 --budget-s 0.5 >"$work/cal_$rate.log" 2>&1
  # Its warnings (a slow pair, a CPU share that moved while measured) bear on every point.
  grep '^WARNING' "$work/cal_$rate.log" >&2 || true
  for model in $models; do
    s=$(servers "$model")
    echo "$model at $rate: profile on $((s + 1)) rank(s) of host 1 ..." >&2
    if [ -n "$budget" ]; then
      # shellcheck disable=SC2046
      mpirun -np $((s + 1)) --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
        $(eval echo $(train_args "$model" "${model}_${rate}_profile")) >/dev/null
    else
      # shellcheck disable=SC2046
      $cluster mpirun -np $((s + 1)) --host "$(sed -n 1p "$HPDL_NETNS_STATE/hostfile" | cut -d' ' -f1):$((s + 1))" \
        -x OMP_NUM_THREADS=1 build/hpdl train $(eval echo $(train_args "$model" "${model}_${rate}_profile")) >/dev/null
    fi
    for h in $hosts_list; do
      [ "$h" -gt "$s" ] || continue  # a parameter server needs a worker beside it
      per_host=()
      [ -n "$budget" ] || per_host=(--cores-per-host "$(/usr/bin/python3 -c "print(min(1.0, $cores / $h))")")
      build/hpdl predict "$work/runs/${model}_${rate}_profile" --network "$work/net_$rate.json" --ranks "$h" \
        "${per_host[@]}" --out "$work/pred_${model}_${rate}_$h" >/dev/null
      read -r predicted low high < <(/usr/bin/python3 -c "import csv; r = next(csv.DictReader(open('$work/pred_${model}_${rate}_$h/prediction.csv'))); print(r['step_s'], r['step_s_low'], r['step_s_high'])")
      # At least MIN_S seconds of steps (by the forecast): under a quota a run shorter than a
      # few periods may meet no throttled one, and its mean says nothing about the budget.
      n=$(/usr/bin/python3 -c "import math; print(max($steps, math.ceil($min_s / $predicted) + 2))")
      echo "$model at $rate: $h host(s), $n steps ..." >&2
      # shellcheck disable=SC2046
      $cluster mpirun -np "$h" --bind-to none -x OMP_NUM_THREADS=1 build/hpdl train \
        $(eval echo $(train_args "$model" "${model}_${rate}_$h" "$n")) >/dev/null
      measured=$(measured_step "$model" "$work/runs/${model}_${rate}_$h" "$s")
      inside=$(/usr/bin/python3 profiling/median_step.py "$work/runs/${model}_${rate}_$h" "$s" inside "$low" "$high")
      echo "$model $rate $h $measured $predicted $low $high $inside ${budget:-none}" >>"$table"
    done
  done
done
[ -z "${TABLE_OUT:-}" ] || cat "$table" >>"$TABLE_OUT"
if [ -n "$save" ]; then
  mkdir -p "$save/runs"
  cp "$table" "$work"/net_*.json "$save/"
  cp -r "$work"/runs/* "$save/runs/"
fi
/usr/bin/python3 profiling/predict_errors.py "$cores" "$table"
