#!/usr/bin/env bash
# The CUDA backend end to end, under mpirun with 2 ranks (one GPU per rank by node-local
# rank, several ranks sharing a GPU when there are fewer). With a GPU: the tiny fixture
# trains on run.device = "gpu" and on the CPU from the same seed; the loss of every epoch
# must agree within 1 % and the manifest must name a CUDA device for each rank. Without
# one (or without the CUDA backend in this build): the refusal must be one clear line,
# a non-zero exit and every rank ended; then the test skips (exit 77) saying why.
# Usage: gpu_train.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
set +e  # each failing command is checked below
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs
run() {  # run NAME DEVICE
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name="$1" --set run.device=\""$2"\" --overwrite
}

if ! probe=$(timeout -k 5 60 $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=gpu_probe \
  --set run.device=\"gpu\" --set train.epochs=1 --overwrite 2>&1); then
  $expect "no CUDA device|built without the CUDA backend" \
    $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=gpu_refused --set run.device=\"gpu\" || exit 1
  echo "no CUDA device: $(printf '%s\n' "$probe" | grep -m1 'hpdl: error:')"
  exit 77
fi

run gpu_train gpu >/dev/null || { echo "FAIL: the GPU run failed"; exit 1; }
run cpu_train cpu >/dev/null || { echo "FAIL: the CPU run failed"; exit 1; }
grep -q '"cuda:' "$out/gpu_train/manifest.json" || { echo "FAIL: no CUDA device in the manifest"; exit 1; }
python3 "$(dirname "$0")/losses_agree.py" "$out/cpu_train/metrics.csv" "$out/gpu_train/metrics.csv" \
  0.01 CPU GPU --atol 1e-4 || exit 1
echo "PASS"
