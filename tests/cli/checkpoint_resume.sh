#!/usr/bin/env bash
# Checkpoint/restart in sync mode, with real signals through mpirun:
#  - SIGUSR1 mid-run: exit 75, manifest "interrupted", checkpoint.h5 written; --resume
#    continues and ends with parameters bitwise equal to an uninterrupted run (Adam, so
#    the optimizer state matters), and the same metrics;
#  - a checkpoint from a different model (other tensors, or the same tensors with another
#    activation or a layer more) or execution plan (run.kernels) is refused
#    naming the first difference;
#  - a truncated checkpoint.h5 is refused, naming the intact checkpoint.prev.h5, from
#    which --resume-from continues to the same parameters; --resume moves it aside and
#    falls back, and a checkpoint write that then fails leaves checkpoint.prev.h5 intact.
# Usage: checkpoint_resume.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/ckpt
expect="bash $(dirname "$0")/expect_error.sh"
source "$(dirname "$0")/interrupt.sh"
rm -rf "$out"
mkdir -p "$out"
args=("$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set train.epochs=300)
params_equal() {  # model.h5 of two run directories, bitwise
  /usr/bin/python3 "$(dirname "$0")/params_equal.py" "$1/model.h5" "$2/model.h5"
}

$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=full >/dev/null

# Interrupt with SIGUSR1 once the first periodic checkpoint exists.
interrupt_at_checkpoint "$out/cut/checkpoint.h5" "$out/cut.log" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --set checkpoint.every_steps=40
grep -q '"status": "interrupted"' "$out/cut/manifest.json"
grep -q '"stopped_by": "SIGUSR1"' "$out/cut/manifest.json"
grep -q "stopped by SIGUSR1 after step" "$out/cut/log.txt"
cp -r "$out/cut" "$out/cut_copy"  # for the bad-input cases below

$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --set checkpoint.every_steps=40 --resume >/dev/null
grep -q "resumed from .*checkpoint.h5: epoch" "$out/cut/log.txt"
grep -q '"status": "complete"' "$out/cut/manifest.json"
params_equal "$out/full" "$out/cut" || { echo "FAIL: resumed run's parameters differ from the uninterrupted run"; exit 1; }
cmp <(cut -d, -f1-6 "$out/full/metrics.csv") <(cut -d, -f1-6 "$out/cut/metrics.csv") ||
  { echo "FAIL: resumed run's metrics differ"; exit 1; }
echo "resume after SIGUSR1: parameters and metrics equal to the uninterrupted run"
$expect "output directory .*cut already holds a completed run, nothing to resume" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --resume
$expect "checkpoint .*nope.h5 not found" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=nope --resume-from "$out/nope.h5"
$expect "checkpoint .*full/model.h5: it is not an hpdl checkpoint" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=nope --resume-from "$out/full/model.h5"

# A different model (another rank count: resume_other_ranks.sh).
mv "$out/cut_copy" "$out/other"
$expect "checkpoint .*other/checkpoint.h5 is from a different model" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume --set model.layers.1.units=8
# The same tensors but another model: the first difference of the [model] tables is named.
$expect "other/checkpoint.h5 is from a different model \\(model.layers.2.type: it has \"relu\", this run \"tanh\"\\)" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume --set model.layers.2.type=\"tanh\"
$expect "other/checkpoint.h5 is from a different model \\(model.layers: it has 4 entries, this run 5 entries\\)" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume \
  --set 'model.layers=[{type="flatten"},{type="dense",units=16},{type="relu"},{type="dropout",keep=0.5},{type="dense",units=4}]'
# The same model computed another way: the execution plans differ.
$expect "other/checkpoint.h5 is from a different execution plan \\(run.kernels: it has none, this run activations = \"plain\"\\)" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume --set run.kernels.activations=plain

# A truncated checkpoint: --resume-from it is refused, naming the intact previous one;
# --resume falls back to checkpoint.prev.h5 with a line saying so; so does --resume when
# only checkpoint.prev.h5 is left. Both give the uninterrupted parameters.
ls "$out/other/checkpoint.prev.h5" >/dev/null
cp -a "$out/other" "$out/only_prev"
rm "$out/only_prev/checkpoint.h5"
size=$(stat -c %s "$out/other/checkpoint.h5")
truncate -s $((size / 2)) "$out/other/checkpoint.h5"
cp -a "$out/other" "$out/failing"
$expect "checkpoint .*other/checkpoint.h5 cannot be read \\(truncated or not HDF5\\).*checkpoint.prev.h5 is intact: continue from it with --resume-from" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume-from "$out/other/checkpoint.h5"
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=other --resume >/dev/null
grep -q "^warning: checkpoint .*other/checkpoint.h5 cannot be read.*: resuming from the previous checkpoint .*other/checkpoint.prev.h5" "$out/other/log.txt" ||
  { echo "FAIL: no fallback line in log.txt"; cat "$out/other/log.txt"; exit 1; }
params_equal "$out/full" "$out/other" || { echo "FAIL: run resumed from checkpoint.prev.h5 differs"; exit 1; }
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=only_prev --resume >/dev/null
grep -q "^warning: checkpoint .*only_prev/checkpoint.h5 is missing: resuming from the previous checkpoint" "$out/only_prev/log.txt" ||
  { echo "FAIL: no fallback line for a missing checkpoint.h5"; cat "$out/only_prev/log.txt"; exit 1; }
params_equal "$out/full" "$out/only_prev" || { echo "FAIL: run resumed from the only checkpoint.prev.h5 differs"; exit 1; }
# A checkpoint whose position is out of range is refused, naming the field.
/usr/bin/python3 - "$out/only_prev/checkpoint.prev.h5" "$out/damaged.h5" <<'PY'
import json, shutil, sys, h5py, numpy
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    h = json.loads(f.attrs["header"].decode() if isinstance(f.attrs["header"], bytes) else f.attrs["header"])
    h["epoch_step"] = -5
    f.attrs.create("header", numpy.bytes_(json.dumps(h)))
PY
$expect "checkpoint .*damaged.h5 is damaged: epoch step = -5" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=damaged --resume-from "$out/damaged.h5"
# In range for the header but beyond the epoch: 256 samples / batch 16 = 16 steps an epoch.
/usr/bin/python3 - "$out/only_prev/checkpoint.prev.h5" "$out/beyond.h5" <<'PY'
import json, shutil, sys, h5py, numpy
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    h = json.loads(f.attrs["header"].decode() if isinstance(f.attrs["header"], bytes) else f.attrs["header"])
    h["epoch_step"] = 1000
    f.attrs.create("header", numpy.bytes_(json.dumps(h)))
PY
$expect "checkpoint is damaged: it stands at step 1000 of epoch [0-9]+, which has 16 steps" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=beyond --resume-from "$out/beyond.h5"
echo "truncated or missing checkpoint.h5: --resume falls back to checkpoint.prev.h5 (said in the log) and gives the uninterrupted parameters"

# A fallback resume never loses the intact checkpoint: the truncated checkpoint.h5 is moved
# aside (kept), and when the first new checkpoint cannot be written (its temporary file
# cannot be created) checkpoint.prev.h5 is still the intact one; a later --resume finishes.
cp "$out/failing/checkpoint.prev.h5" "$out/intact.h5"
cp "$out/failing/checkpoint.h5" "$out/truncated.h5"
mkdir "$out/failing/checkpoint.h5.tmp"
if $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=failing --set checkpoint.every_steps=40 \
  --resume >"$out/failing.log" 2>&1; then
  echo "FAIL: a run whose checkpoint cannot be written succeeded"; exit 1
fi
grep -q "cannot write .*failing/checkpoint.h5" "$out/failing.log" ||
  { echo "FAIL: no line naming the checkpoint that could not be written"; cat "$out/failing.log"; exit 1; }
cmp -s "$out/failing/checkpoint.prev.h5" "$out/intact.h5" ||
  { echo "FAIL: the intact checkpoint.prev.h5 was replaced"; ls -la "$out/failing"; exit 1; }
cmp -s "$out/failing/checkpoint.h5.damaged" "$out/truncated.h5" ||
  { echo "FAIL: the truncated checkpoint was not kept as checkpoint.h5.damaged"; ls -la "$out/failing"; exit 1; }
grep -q "moved aside to .*failing/checkpoint.h5.damaged" "$out/failing/log.txt"
rm -rf "$out/failing/checkpoint.h5.tmp"
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=failing --set checkpoint.every_steps=40 --resume >/dev/null
params_equal "$out/full" "$out/failing" || { echo "FAIL: the run resumed after the failed write differs"; exit 1; }
echo "fallback resume: the damaged checkpoint is kept aside, a failed write leaves the intact one, the run finishes"

# Parameter server: 1 server + 1 worker (Downpour, n_fetch = n_push = 1) is deterministic,
# so interrupted + resumed must equal uninterrupted; 1 server + 2 workers with adaptive
# DC-ASGD (backups and mean squares in the checkpoint) must resume and finish.
ps=(--set optimizer.name=sgd --set optimizer.lr=0.05 --set checkpoint.every_steps=300)
interrupt() {  # NAME NP ARGS...: start, SIGUSR1 after the first checkpoint, expect exit 75
  local name=$1 np=$2 pid rc=0
  shift 2
  $mpirun -np "$np" "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name="$name" "$@" >"$out/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do [ -f "$out/$name/checkpoint.h5" ] && break; sleep 0.01; done
  kill -USR1 $pid
  wait $pid || rc=$?
  [ "$rc" -eq 75 ] || { echo "FAIL: $name exited $rc, expected 75"; cat "$out/$name.log"; exit 1; }
  grep -q '"status": "interrupted"' "$out/$name/manifest.json"
}
$mpirun -np 2 "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name=ps_full --set distributed.mode=downpour >/dev/null
interrupt ps_cut 2 --set distributed.mode=downpour
$mpirun -np 2 "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name=ps_cut --set distributed.mode=downpour --resume >/dev/null
grep -q "resumed from" "$out/ps_cut/log.txt"
params_equal "$out/ps_full" "$out/ps_cut" || { echo "FAIL: resumed parameter-server run differs from the uninterrupted one"; exit 1; }
echo "parameter server 1+1: resumed == uninterrupted"
# DC-ASGD 1+1 with a pull every 3 steps: the server's w_bak and mean squares for the worker
# come back from the checkpoint, so the resumed run is the uninterrupted one bit for bit.
dc1=(--set distributed.mode=dcasgd --set distributed.dc_adaptive=true --set distributed.n_fetch=3)
$mpirun -np 2 "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name=ps_dc_full "${dc1[@]}" >/dev/null
interrupt ps_dc_cut 2 "${dc1[@]}"
$mpirun -np 2 "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name=ps_dc_cut "${dc1[@]}" --resume >/dev/null
params_equal "$out/ps_dc_full" "$out/ps_dc_cut" || { echo "FAIL: resumed DC-ASGD run differs from the uninterrupted one"; exit 1; }
echo "parameter server 1+1 adaptive DC-ASGD: resumed == uninterrupted"
dc=(--set distributed.mode=dcasgd --set distributed.dc_adaptive=true)
interrupt ps_dc 3 "${dc[@]}"
$mpirun -np 3 "$hpdl" train "${args[@]}" "${ps[@]}" --set run.name=ps_dc "${dc[@]}" --resume >/dev/null
grep -q '"status": "complete"' "$out/ps_dc/manifest.json"
acc=$(tail -1 "$out/ps_dc/metrics.csv" | cut -d, -f5)
/usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') > 0.9 else 'FAIL: resumed DC-ASGD accuracy $acc')"
echo "parameter server 1+2 adaptive DC-ASGD: resumed and finished, accuracy $acc"
echo "PASS"
