#!/usr/bin/env bash
# Local SGD / DiLoCo and compressed gradients through the real command line:
#  - a run with sync_every = 4, the Nesterov outer step and bf16 changes, stopped by SIGUSR1
#    at a checkpoint in the middle of an interval (every 7 steps: ranks' parameters differ
#    there), resumes to parameters bitwise equal to the uninterrupted run: each rank's own
#    parameters, Adam moments and error feedback, and the shared anchor and momentum, are
#    in the checkpoint;
#  - the same for compressed gradients (fp16, every step synchronous: each rank's error
#    feedback) and for asynchronous DiLoCo on a parameter server (the server's outer
#    momentum);
#  - the settings are refused, naming the key, where they do not apply.
# Usage: low_communication.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/lowcomm
expect="bash $(dirname "$0")/expect_error.sh"
source "$(dirname "$0")/interrupt.sh"
rm -rf "$out"
mkdir -p "$out"
params_equal() {  # model.h5 of two run directories, bitwise
  /usr/bin/python3 "$(dirname "$0")/params_equal.py" "$1/model.h5" "$2/model.h5"
}

resume_equals_uninterrupted() {  # NAME SETTINGS...
  local name=$1
  shift
  local args=("$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set train.epochs=150 "$@")
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=${name}_full >/dev/null
  interrupt_at_checkpoint "$out/${name}_cut/checkpoint.h5" "$out/${name}_cut.log" \
    $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=${name}_cut --set checkpoint.every_steps=7
  grep -q '"status": "interrupted"' "$out/${name}_cut/manifest.json"
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=${name}_cut --set checkpoint.every_steps=7 --resume >/dev/null
  grep -q '"status": "complete"' "$out/${name}_cut/manifest.json"
  params_equal "$out/${name}_full" "$out/${name}_cut" ||
    { echo "FAIL: $name: resumed run's parameters differ from the uninterrupted run"; exit 1; }
  cmp <(cut -d, -f1-6 "$out/${name}_full/metrics.csv") <(cut -d, -f1-6 "$out/${name}_cut/metrics.csv") ||
    { echo "FAIL: $name: resumed run's metrics differ"; exit 1; }
  echo "$name: resumed from a checkpoint mid-interval, parameters and metrics equal to the uninterrupted run"
}

resume_equals_uninterrupted diloco --set distributed.sync_every=4 --set 'distributed.outer="nesterov"' \
  --set 'distributed.compression="bf16"' --set distributed.local_warmup_steps=5
resume_equals_uninterrupted fp16 --set 'distributed.compression="fp16"'
# Asynchronous DiLoCo, 1 server + 1 worker (deterministic): the server's outer momentum is
# in the checkpoint; pushing every 4 steps, a checkpoint pauses the worker mid-interval and
# carries its pending change (nothing is pushed early). The same for DC-ASGD pushing every 3
# steps and pulling every 2 (its backups and mean squares on the server, the pending sum on
# the worker).
resume_equals_uninterrupted ps_diloco --set 'distributed.mode="downpour"' --set 'optimizer.name="sgd"' \
  --set 'distributed.outer="nesterov"'
resume_equals_uninterrupted ps_diloco_h4 --set 'distributed.mode="downpour"' --set 'optimizer.name="sgd"' \
  --set 'distributed.outer="nesterov"' --set distributed.n_push=4 --set distributed.n_fetch=4
resume_equals_uninterrupted ps_dcasgd_push3 --set 'distributed.mode="dcasgd"' --set 'optimizer.name="sgd"' \
  --set distributed.dc_adaptive=true --set distributed.n_push=3 --set distributed.n_fetch=2

# Where the settings do not apply: the parameter server; out-of-range values.
$expect "distributed.compression is for distributed.mode = \"sync\"" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.mode="downpour"' \
  --set 'optimizer.name="sgd"' --set 'distributed.compression="bf16"'
$expect "distributed.sync_every is for distributed.mode = \"sync\"" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.mode="dcasgd"' \
  --set 'optimizer.name="sgd"' --set distributed.sync_every=8
$expect "distributed.outer = \"nesterov\" on a parameter server is asynchronous DiLoCo with distributed.mode = \"downpour\"" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.mode="dcasgd"' \
  --set 'optimizer.name="sgd"' --set 'distributed.outer="nesterov"'
$expect "distributed.outer applies to local SGD: set distributed.sync_every" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.outer="nesterov"'
$expect "distributed.local_warmup_steps applies to local SGD" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set distributed.local_warmup_steps=10
$expect "distributed.outer_lr is the Nesterov outer step's: set distributed.outer = \"nesterov\"" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set distributed.sync_every=4 --set distributed.outer_lr=0.5
$expect "distributed.local_warmup_steps is for distributed.mode = \"sync\"" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.mode="downpour"' \
  --set 'optimizer.name="sgd"' --set distributed.local_warmup_steps=3
$expect "distributed.compression = \"int8\" is not one of: none, bf16, fp16" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.compression="int8"'
$expect "distributed.sync_every" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set distributed.sync_every=0
$expect "distributed.outer" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set 'distributed.outer="adam"'
echo "low-communication settings: refused where they do not apply"
