#!/usr/bin/env bash
# A failure on ranks other than 0 after set-up ends the job the agreed way: two parameter-
# server workers diverge at about the same step (a training file holding one huge value,
# 1 server + 2 workers). Exactly one "hpdl: error:" line naming a worker's rank and the
# step, no MPI_Abort banner, exit 1, every rank ended; rank 0's manifest says "failed" with
# that line and log.txt ends with it. Usage: agreed_ending.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs
rm -rf "$out/ae_ps"
start=$(date +%s.%N)
bash "$(dirname "$0")/expect_error.sh" \
  "^hpdl: error: rank [12]: training diverged at worker step [0-9]+ \\(epoch 1\\): the gradient is not finite" \
  $mpirun -np 3 "$hpdl" train "$fx/tiny.toml" --set data.train_file=\"$fx/huge.h5\" \
  --set distributed.mode=downpour --set optimizer.name=\"sgd\" --set optimizer.momentum=0 \
  --set run.name=ae_ps
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
grep -q '"status": "failed"' "$out/ae_ps/manifest.json" || { echo "FAIL: manifest not failed"; exit 1; }
grep -q '"error": "rank [12]: training diverged at worker step' "$out/ae_ps/manifest.json" ||
  { echo "FAIL: the manifest's error is not the worker's"; exit 1; }
tail -1 "$out/ae_ps/log.txt" | grep -q "^error: rank [12]: training diverged" ||
  { echo "FAIL: log.txt does not end with the error"; tail -3 "$out/ae_ps/log.txt"; exit 1; }
echo "two diverging workers: one line, manifest failed, job ended in $took s"
echo "PASS"
