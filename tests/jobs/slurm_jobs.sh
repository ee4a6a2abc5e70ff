#!/usr/bin/env bash
# The sbatch scripts against a real one-node Slurm (scripts/slurm_up.sh starts it):
#  (a) synchronous training, (b) parameter server, (c)+(d) a 3-line sweep array and its
#  afterok collection job, a grid with an unknown key refused before anything is queued,
#  and (e) a job whose time limit's --signal arrives mid-training: it checkpoints, requeues
#  itself, resumes and ends with the parameters of an uninterrupted run; (f) with
#  HPDL_RESTARTS, a job whose rank is killed starts again inside its allocation.
# Prints the time from sbatch to the first training step and the sweep's table.
# Usage: slurm_jobs.sh SOURCE_DIR HPDL FIXTURES WORK_DIR     (exit 77 = skipped)
set -u
src=$1 hpdl=$2 fx=$3 work=$4
source "$src/tests/support/skip.sh"
# (Its messages go through a file: the daemons it starts must not hold a pipe open.)
up_log=$(mktemp)
if ! bash "$src/scripts/slurm_up.sh" >"$up_log" 2>&1; then
  why=$(tr '\n' ' ' <"$up_log")
  rm -f "$up_log"
  skip "a local Slurm could not be started: ${why:-slurm_up.sh failed}"
fi
rm -f "$up_log"
export SLURM_CONF=${HPDL_SLURM_DIR:-/tmp/hpdl-slurm}/slurm.conf
export HPDL=$hpdl HPDL_JOBS=$src/jobs HPDL_OUTPUTS=outputs
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; for f in slurm-*.out; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }
# wait_job ID SECONDS: the job's final state (scancel and TIMEOUT_WAITING past the bound).
wait_job() {
  local st
  for _ in $(seq "$2"); do
    st=$(scontrol show job "$1" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case "$st" in COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL)
      echo "$st"; return ;;
    esac
    sleep 1
  done
  scancel "$1"
  echo TIMEOUT_WAITING
}
manifest() { /usr/bin/python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# (a) sync, 2 tasks
t0=$(date +%s.%N)
jid=$(sbatch --parsable -n 2 --overcommit "$HPDL_JOBS/train.sbatch" "$fx/tiny.toml" --set train.epochs=3) || fail "sbatch (a)"
st=$(wait_job "$jid" 120)
[ "$st" = COMPLETED ] || fail "(a) job $jid ended $st"
m=outputs/$jid/manifest.json
[ "$(manifest "$m" 'm["status"], m["ranks"]')" = "('complete', 2)" ] || fail "(a) $m not complete on 2 ranks"
latency=$(manifest "$m" "'%.2f' % (m['train_start_unix'] - $t0)")
echo "(a) sync job $jid: complete in outputs/$jid/; sbatch to first training step: $latency s"

# (a2) calibrate.sbatch: network.json and the table from srun's 2 tasks
jid=$(sbatch --parsable -n 2 --overcommit "$HPDL_JOBS/calibrate.sbatch" --max-bytes 65536 --budget-s 0.2) ||
  fail "sbatch (a2)"
st=$(wait_job "$jid" 120)
[ "$st" = COMPLETED ] || fail "(a2) calibrate job $jid ended $st"
[ "$(manifest "network-$jid.json" 'm["ranks"], len(m["point_to_point"])')" = "(2, 1)" ] ||
  fail "(a2) network-$jid.json does not hold 2 ranks and their pair"
grep -q "point to point (one way)" "slurm-$jid.out" || fail "(a2) no table in slurm-$jid.out"
echo "(a2) calibrate job $jid: network-$jid.json written"

# (b) parameter server, 1 server + 2 workers
jid=$(HPDL_SERVERS=1 sbatch --parsable -n 3 --overcommit "$HPDL_JOBS/train_ps.sbatch" "$fx/tiny.toml" \
  --set optimizer.name=sgd --set optimizer.lr=0.1 --set train.epochs=3) || fail "sbatch (b)"
st=$(wait_job "$jid" 120)
[ "$st" = COMPLETED ] || fail "(b) job $jid ended $st"
m=outputs/$jid/manifest.json
[ "$(manifest "$m" 'm["status"], m["parameter_server"]["mode"], m["parameter_server"]["workers"]')" = "('complete', 'downpour', 2)" ] ||
  fail "(b) $m is not a complete downpour run with 2 workers"
echo "(b) parameter-server job $jid: complete, 1 server + 2 workers"

# (c) + (d) sweep and collection
printf '%s\n' "# a small grid: hidden units x learning rate" \
  "$fx/tiny.toml model.layers.1.units=8" \
  "$fx/tiny.toml model.layers.1.units=16 optimizer.lr=0.02   # comment" "" \
  "$fx/tiny.toml model.layers.1.units=32 train.epochs=2 profile.enabled=true profile.active=8 threads=1" \
  "$fx/tiny.toml model.layers.1.units=32 train.epochs=2 profile.enabled=true profile.active=8 threads=2" > grid.txt
out=$(bash "$HPDL_JOBS/submit_sweep.sh" grid.txt -n 2 -c 2 --overcommit) || fail "submit_sweep: $out"
echo "$out"
array=$(echo "$out" | sed -n 's/.*array job \([0-9]*\),.*/\1/p')
collect=$(echo "$out" | sed -n 's/.*collection job \([0-9]*\),.*/\1/p')
st=$(wait_job "$collect" 240)
[ "$st" = COMPLETED ] || fail "(d) collection job $collect ended $st"
dir=outputs/$array
for f in results.csv results.md accuracy_vs_time.png; do [ -s "$dir/$f" ] || fail "(d) missing $dir/$f"; done
[ "$(grep -c ',complete,' "$dir/results.csv")" -eq 4 ] || fail "(d) $dir/results.csv does not list 4 complete runs"
grep -q 'units=16 optimizer.lr=0.02' "$dir/results.md" || fail "(d) results.md lacks the grid line"
# The profiled lines (tasks 2 and 3, the same run on 1 and 2 threads): their layers in the
# per-layer table, with GFLOP/s and threads, and the scaling with threads.
for f in layers_sweep.csv layers_sweep.md report.html layers_threads.md; do [ -s "$dir/$f" ] || fail "(d) missing $dir/$f"; done
/usr/bin/python3 - "$dir/layers_sweep.csv" <<'PY' || fail "(d) layers_sweep.csv is not tasks 2 and 3's profiles"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert {r["task"] for r in rows} == {"2", "3"}, rows
assert {r["task"]: r["threads"] for r in rows} == {"2": "1", "3": "2"}, rows
dense = next(r for r in rows if r["layer"] == "dense1")
assert float(dense["forward_ms"]) > 0 and float(dense["forward_gflops_per_s"]) > 0, dense
assert abs(sum(float(r["share_of_layers"]) for r in rows if r["task"] == "2") - 1) < 1e-3, rows
PY
grep -q "| dense1 | .* (1.00x) | .*x) |" "$dir/layers_threads.md" || fail "(d) layers_threads.md: $(cat "$dir/layers_threads.md")"
grep -q '"swept":\["model.layers.1.units"' "$dir/report.html" || fail "(d) the sweep's page does not name the swept key"
cat "$dir/results.md"

# A grid with an unknown key: refused, naming the line, and nothing queued.
printf '%s\n' "$fx/tiny.toml model.layers.1.units=8" "$fx/tiny.toml optimizer.lrr=0.1" > bad.grid
before=$(squeue -h | wc -l)
if err=$(bash "$HPDL_JOBS/submit_sweep.sh" bad.grid 2>&1); then fail "bad grid was accepted: $err"; fi
echo "$err" | grep -q "bad.grid:2: config .*optimizer: unknown key 'lrr'" || fail "bad grid message: $err"
[ "$(squeue -h | wc -l)" -eq "$before" ] || fail "bad grid queued jobs"
echo "bad grid refused: $err"
# threads=N must be a whole number within the tasks' --cpus-per-task (1 unless given).
printf '%s\n' "$fx/tiny.toml threads=x" > bad.grid
if err=$(bash "$HPDL_JOBS/submit_sweep.sh" bad.grid 2>&1); then fail "threads=x was accepted: $err"; fi
echo "$err" | grep -q "bad.grid:1: threads=x is not a positive whole number" || fail "threads=x message: $err"
printf '%s\n' "$fx/tiny.toml threads=2" "$fx/tiny.toml threads=4" > bad.grid
if err=$(bash "$HPDL_JOBS/submit_sweep.sh" bad.grid -c 2 2>&1); then fail "threads=4 on -c 2 was accepted: $err"; fi
echo "$err" | grep -q "bad.grid:2: threads=4 is more than the tasks' --cpus-per-task=2" || fail "threads=4 message: $err"
[ "$(squeue -h | wc -l)" -eq "$before" ] || fail "bad threads grids queued jobs"
echo "bad threads refused: $err"

# (e) time limit 2 min, --signal=USR1@60: Slurm sends the signal 30-60 s into each run.
# The job's config asks for a million epochs, so its first run is surely cut; once the job
# has checkpointed and requeued itself (Slurm's requeue delay is cred_expire, 10 s in
# slurm_up.sh), the test shortens the config to a few hundred epochs past the checkpoint,
# which the resumed run finishes. Plain SGD with a small rate keeps the loss (and the
# floats) away from zero.
wide=(--set model.layers.1.units=1024 --set data.test_file='""' --set train.progress=false
  --set optimizer.name=sgd --set optimizer.lr=0.001)
sed -e 's/^epochs = .*/epochs = 1000000/' "$fx/tiny.toml" > long.toml
jid=$(sbatch --parsable -n 2 --overcommit --time=2 --signal=USR1@60 "$HPDL_JOBS/train.sbatch" \
  "$PWD/long.toml" "${wide[@]}") || fail "sbatch (e)"
for _ in $(seq 240); do grep -q "requeueing" "slurm-$jid.out" 2>/dev/null && break; sleep 1; done
grep -q "requeueing" "slurm-$jid.out" || { scancel "$jid"; fail "(e) job $jid did not requeue within 240 s"; }
step=$(sed -n 's/^stopped by SIGUSR1 after step \([0-9]*\):.*/\1/p' "outputs/$jid/log.txt" | head -1)
epochs=$((step / 16 + 300))
sed -i "s/^epochs = .*/epochs = $epochs/" long.toml
echo "(e) job $jid stopped at step $step by the time-limit signal; training shortened to $epochs epochs"
st=$(wait_job "$jid" 300)
[ "$st" = COMPLETED ] || fail "(e) job $jid ended $st"
restarts=$(scontrol show job "$jid" -o | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
[ "${restarts:-0}" -ge 1 ] || fail "(e) job $jid was not requeued"
grep -q "stopped by SIGUSR1 after step" "outputs/$jid/log.txt" || fail "(e) no checkpoint at the signal"
grep -q "resumed from" "outputs/$jid/log.txt" || fail "(e) no resume"
grep -q "requeueing" "slurm-$jid.out" || fail "(e) the script did not requeue"
[ "$(manifest "outputs/$jid/manifest.json" 'm["status"], m["final"]["epochs"]')" = "('complete', $epochs)" ] ||
  fail "(e) outputs/$jid is not complete after $epochs epochs"
OMP_NUM_THREADS=1 srun -n 2 --overcommit --mpi=pmix "$hpdl" train long.toml "${wide[@]}" \
  --set run.output_dir='"reference"' >/dev/null 2>&1 || fail "reference run"
/usr/bin/python3 "$src/tests/cli/params_equal.py" "outputs/$jid/model.h5" reference/tiny/model.h5 ||
  fail "(e) requeued job and uninterrupted run differ"
echo "(e) job $jid: checkpointed at the signal, requeued $restarts time(s), resumed, parameters equal to an uninterrupted run"
grep -E "checkpoint: step|stopped by|resumed from" "outputs/$jid/log.txt"

# (f) HPDL_RESTARTS: a rank killed mid-run (exit >= 128, the node answering) is started
# again inside the allocation with --resume, and the run ends with the parameters of 1 rank
# without a kill. (One node: the path that drops a lost node cannot be taken here.)
args=("$fx/tiny.toml" --set train.epochs=400 --set checkpoint.every_steps=20 --set train.progress=false)
jid=$(HPDL_RESTARTS=2 sbatch --parsable -n 2 --overcommit --no-kill "$HPDL_JOBS/train.sbatch" "${args[@]}") ||
  fail "sbatch (f)"
for _ in $(seq 600); do [ -f "outputs/$jid/checkpoint.h5" ] && break; sleep 0.1; done
victim=$(pgrep -f "^$hpdl train .*run.name=\"$jid\"" | tail -1)
[ -n "$victim" ] && kill -9 "$victim" || { scancel "$jid"; fail "(f) no rank of job $jid to kill"; }
st=$(wait_job "$jid" 120)
[ "$st" = COMPLETED ] || fail "(f) job $jid ended $st"
grep -q "hpdl job $jid: the job ended without an hpdl error (exit [0-9]*: a rank or srun killed), every host answering: restart 1 of 2 with --resume" "slurm-$jid.out" ||
  fail "(f) no restart line"
grep -q "resumed from" "outputs/$jid/log.txt" && grep -q ',1,[0-9]*,,1$' "outputs/$jid/restarts.csv" ||
  fail "(f) no resume or no restarts.csv row"
OMP_NUM_THREADS=1 srun -n 1 --mpi=pmix "$hpdl" train "${args[@]}" --set run.output_dir='"reference"' \
  --set run.name='"f"' >/dev/null 2>&1 || fail "(f) reference run"
/usr/bin/python3 "$src/tests/cli/params_equal.py" "outputs/$jid/model.h5" reference/f/model.h5 2e-5 ||
  fail "(f) the restarted job and 1 rank differ"
echo "(f) job $jid: a rank killed, restarted in the allocation, parameters within 2e-5 of 1 rank"
echo "PASS"
