#!/usr/bin/env bash
# The seeds' scaling table (003: seconds per MNIST epoch of the MLP at 4/8/12 nodes,
# Downpour vs DC-ASGD; here sync as well) on the emulated cluster (scripts/netns_cluster.sh):
# the MLP on Fashion-MNIST (60000 rows, batch 32; MODEL picks another preset) on H hosts x
# 1 rank, each host with the
# same CPU budget (CPUS_PER_HOST cores, default: this machine's cores / the largest H, so the
# largest cluster has the whole machine and H hosts have H times the compute of one),
# synchronous (global batch 32 split over H ranks), Downpour and DC-ASGD (SERVERS servers on
# the first hosts, a worker with its own batch 32 on each other host), at each link rate.
# Each run trains STEPS steps with the profiler on; a step is the mean of the recorded
# ones (sync: the slowest rank's over its own steps, median_step.py; parameter server: a
# worker's; the mean, since under a CPU
# quota a few steps absorb the throttled time), and the epoch time is that
# step times the steps an epoch takes (sync 60000 / 32; parameter server 60000 / (32 W) per
# worker, workers in parallel) — an extrapolation from STEPS steps, not a timed epoch. A
# run shorter than MIN_S seconds (default 2) runs again with enough steps: under a quota a
# run of a few periods may meet none of their throttled time.
# With TARGET (a test accuracy, e.g. 0.85) each point also trains for real, up to EPOCHS
# epochs, and reports the time to that accuracy (training time, evaluations excluded) and
# the accuracy after EPOCHS epochs. A timed run is bounded by TTA_LIMIT_S (default 900):
# one that would run longer is cut (its row says "> N"), and a sync point whose estimate
# (the epochs one host needed, since sync on H ranks follows one rank step for step, x
# this point's seconds per epoch) exceeds the bound is not run: its row shows the estimate
# as "~N" (hosts in ascending order, 1 first, give the epochs).
# A run that fails or stalls (run.watchdog_s = WATCHDOG_S, default 120) gets a row saying
# so. Rows also go to $OUT/scaling.csv (default outputs/scaling) for plot_scaling.py.
# MODES may also name the synchronous variants of profiling/variants.sh (bf16, fp16,
# localH, dilocoH, ..._bf16): local SGD runs at least 2 H steps, a multiple of H, so the
# recorded steps hold their share of parameter averages. adilocoH is asynchronous DiLoCo on
# the parameter server (Downpour pulling and pushing every H steps, the server's outer
# Nesterov step). PS_SETS adds --set values to every parameter-server run (the server
# applies plain SGD: a preset trained with Adam needs an SGD learning rate, e.g.
# PS_SETS="optimizer.lr=0.05"); SETS adds them to every run (SETS='run.wait="spin"': ranks
# that spin while they wait, as before run.wait). MODEL picks another preset (default mlp_fashion_mnist;
# lenet_fashion_mnist, har_2x2: the epoch's rows are read from its training file).
# HPDL=another/binary measures another build (A/B against an older commit).
#   RATES="100mbit 1gbit" HOSTS="1 2 4 8 16" STEPS=40 profiling/bench_scaling.sh
#   RATES=1gbit HOSTS=16 MODES="downpour dcasgd" TARGET=0.85 EPOCHS=4 profiling/bench_scaling.sh
#   RATES="100mbit 1gbit" HOSTS="1 2 4 8 12 16" TARGET=0.85 EPOCHS=4 profiling/bench_scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source profiling/cpu_line.sh
rates=${RATES:-100mbit}
hosts_list=${HOSTS:-1 2 4 8}
modes=${MODES:-sync downpour dcasgd}
steps=${STEPS:-40}
min_s=${MIN_S:-2}  # a run shorter than this (STEPS x its mean step) runs again, longer
servers=${SERVERS:-1}
target=${TARGET:-}
epochs=${EPOCHS:-5}
tta_limit=${TTA_LIMIT_S:-900}
watchdog=${WATCHDOG_S:-120}  # a run that stalls this long ends (named in its row)
out=${OUT:-outputs/scaling}
hpdl=${HPDL:-build/hpdl}
model=${MODEL:-mlp_fashion_mnist}
ps_sets=${PS_SETS:-}
all_sets=${SETS:-}  # --set values for every run, e.g. SETS='run.wait="spin"'
source profiling/knobs.sh
knob_counts HOSTS "$hosts_list"
knob_counts STEPS "$steps"
knob_number MIN_S "$min_s"
knob_counts SERVERS "$servers"
knob_counts EPOCHS "$epochs"
knob_positive TTA_LIMIT_S "$tta_limit"
knob_positive WATCHDOG_S "$watchdog"
[ -z "$target" ] || knob_positive TARGET "$target"
[ -z "${CPUS_PER_HOST:-}" ] || knob_positive CPUS_PER_HOST "$CPUS_PER_HOST"
read -r rows batch < <(/usr/bin/python3 - "inputs/$model.toml" <<'PY'
import h5py, sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))
with h5py.File(c["data"]["train_file"]) as f:
    print(len(f[c["data"].get("train_group", "/")]["y"]), c["train"]["batch"])
PY
)
source profiling/variants.sh
source profiling/cluster_env.sh hpdl-scaling
n_hosts=$(printf '%s\n' $hosts_list | sort -n | tail -1)
cpus=${CPUS_PER_HOST:-$(awk -v c="$(nproc)" -v h="$n_hosts" 'BEGIN { printf "%.4g", c / h }')}
mkdir -p "$out"
csv=$out/scaling.csv
echo "model $model, $rows training rows, batch $batch" >&2
echo "model,rate,hosts,mode,workers,cpus_per_host,step_ms,epoch_s,samples_per_s,tta_s,acc_at_epochs" >"$csv"
# TTA_FILE TARGET -> "seconds-to-target accuracy-at-end epochs-to-target" ("-" where not
# reached; the time is train_s: training only, as the parameter server reports it)
time_to_target() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hit = [r for r in rows if float(r["test_accuracy"]) >= float(sys.argv[2])]
print(f"{float(hit[0]['train_s']):.1f}" if hit else "-",
      f"{float(rows[-1]['test_accuracy']):.4f}" if rows else "-", hit[0]["epoch"] if hit else "-")
PY
}
mean_step() { /usr/bin/python3 profiling/median_step.py "$1" "$2" mean; }  # RUN_DIR SERVERS -> seconds
train() {  # NAME HOSTS HPDL-ARGS...; with LIMIT_S set, a run past it is stopped (exit 124)
  local name=$1 h=$2 bound=() v extra=()
  shift 2
  for v in $all_sets; do extra+=(--set "$v"); done
  [ -z "${LIMIT_S:-}" ] || bound=(timeout --signal=TERM --kill-after=30 "$LIMIT_S")
  "${bound[@]}" $cluster mpirun -np "$h" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" train \
    "inputs/$model.toml" "$@" "${extra[@]}" --set run.output_dir="\"$work/runs\"" \
    --set run.name="\"$name\"" --set train.progress=false --set run.watchdog_s="$watchdog" \
    --overwrite >"$work/$name.log" 2>&1
}
measure() {  # STEPS: the run $name on $h hosts with $mode_args, the profiler on STEPS steps
  train "$name" "$h" "${mode_args[@]}" --set train.max_steps="$1" --set train.epochs=1000 \
    --set profile.enabled=true --set profile.skip=3 --set profile.warmup=0 \
    --set profile.active="$1" --set 'data.test_file=""'
}
echo "$(cpu_line); each host $cpus core(s)"
printf '%-8s %-6s %-9s %7s %9s %9s %10s %9s %9s\n' rate hosts mode workers "step ms" "s/epoch" \
  "samples/s" "tta s" "acc@E"
declare -A sync_epochs  # per rate: the epochs one host's sync run needed to reach TARGET
for rate in $rates; do
  $cluster up "$n_hosts" --rate "$rate" --cpus-per-host "$cpus" >/dev/null
  for h in $hosts_list; do
    for mode in $modes; do
      s=0 mode_args=() run_steps=$steps
      every=""
      case $mode in
        sync) ;;
        downpour | dcasgd | adiloco[0-9]*)
          s=$servers mode_args=(--set "distributed.mode=\"${mode/adiloco*/downpour}\""
            --set 'optimizer.name="sgd"' --set "distributed.servers=$servers")
          for v in $ps_sets; do mode_args+=(--set "$v"); done
          if [ "${mode#adiloco}" != "$mode" ]; then
            every=${mode#adiloco}
            mode_args+=(--set "distributed.n_fetch=$every" --set "distributed.n_push=$every"
              --set 'distributed.outer="nesterov"')
          fi
          [ "$h" -gt "$servers" ] || continue ;;
        *)
          while read -r v; do [ -z "$v" ] || mode_args+=(--set "$v"); done < <(variant_sets "$mode")
          every=$(variant_sets "$mode" | sed -n 's/^distributed.sync_every=//p') ;;
      esac
      [ -z "$every" ] ||
        run_steps=$(( (steps > 2 * every ? steps + every - 1 : 2 * every) / every * every ))
      w=$((h - s)) name=${mode}_${h}_$rate
      echo "$mode on $h host(s) at $rate ..." >&2
      if ! measure "$run_steps"; then
        printf '%-8s %-6s %-9s %7s  did not finish: %s\n' "$rate" "$h" "$mode" "$w" \
          "$(grep -m1 'hpdl: error' "$work/$name.log" | cut -c1-160)"
        continue
      fi
      step=$(mean_step "$work/runs/$name" "$s")
      # At least MIN_S seconds of steps: under a quota a shorter run may meet none of its
      # throttled periods (40 steps of 0.5 ms span two 10 ms periods). Run again, longer.
      more=$(awk -v s="$step" -v n="$run_steps" -v m="$min_s" 'BEGIN { print (s * n < m) ? int(m / s) + 1 : 0 }')
      if [ "$more" -gt 0 ]; then
        [ -z "$every" ] || more=$(( (more + every - 1) / every * every ))
        measure "$more" && step=$(mean_step "$work/runs/$name" "$s")
      fi
      tta="" acc=""
      if [ -n "$target" ]; then
        est=""
        if [ "$mode" = sync ] && [ "$h" -gt 1 ] && [ -n "${sync_epochs[$rate]:-}" ]; then
          est=$(awk -v e="${sync_epochs[$rate]}" -v s="$step" -v r="$rows" -v b="$batch" \
            'BEGIN { n = int((r + b - 1) / b); printf "%.1f", e * n * s }')
        fi
        if [ -n "$est" ] && awk -v e="$est" -v l="$tta_limit" 'BEGIN { exit !(e > l) }'; then
          tta="~$est" acc="-"
        elif LIMIT_S=$tta_limit train "${name}_tta" "$h" "${mode_args[@]}" \
          --set train.epochs="$epochs"; then
          read -r tta acc reached < <(time_to_target "$work/runs/${name}_tta/metrics.csv" "$target")
          [ "$mode" != sync ] || [ "$h" != 1 ] || [ "$reached" = - ] ||
            sync_epochs[$rate]=$reached
        elif [ $? -eq 124 ]; then
          tta="> $tta_limit" acc="-"
        else
          tta="failed" acc="-"
        fi
      fi
      /usr/bin/python3 - "$model" "$rate" "$h" "$mode" "$w" "$step" "$rows" "$batch" "$cpus" "$tta" "$acc" "$csv" <<'PY'
import math, sys
model, rate, h, mode, w, step, rows, batch, cpus, tta, acc, csv = sys.argv[1:]
w, step, rows, batch = int(w), float(step), int(rows), int(batch)
ps = mode in ("downpour", "dcasgd") or mode.startswith("adiloco")
steps = math.ceil(rows / (batch * w)) if ps else math.ceil(rows / batch)
epoch = steps * step
print(f"{rate:<8} {h:<6} {mode:<9} {w:>7} {1e3*step:>9.2f} {epoch:>9.1f} {rows/epoch:>10.0f} {tta:>9} {acc:>9}")
open(csv, "a").write(f"{model},{rate},{h},{mode},{w},{cpus},{1e3*step:.3f},{epoch:.2f},{rows/epoch:.1f},{tta},{acc}\n")
PY
    done
  done
done
echo "rows in $csv (plot: /usr/bin/python3 profiling/plot_scaling.py $csv)"
