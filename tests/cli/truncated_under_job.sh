#!/usr/bin/env bash
# A data file truncated under a running job (its inputs are read from a mapping of the file):
# the reading rank must end the job the agreed way, with one line naming the file, exit 1 and
# a manifest that says "failed", not die of SIGBUS (exit 135, no line, "running").
# Usage: truncated_under_job.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/truncated_under_job data=$fx/shrinking_train.h5
rm -rf "$out"
cp "$fx/train.h5" "$data"
# Once the run has trained an epoch, the file loses all but its first 4 KiB.
(for _ in $(seq 600); do [ "$({ wc -l <"$out/metrics.csv"; } 2>/dev/null || echo 0)" -ge 2 ] && break; sleep 0.05; done
 truncate -s 4096 "$data") &
bash "$(dirname "$0")/expect_error.sh" "shrinking_train.h5:/x: rows .* are no longer in the file: it was truncated or rewritten while the job read it" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=\"truncated_under_job\" \
  --set data.train_file=\"$data\" --set train.epochs=1000000
wait
grep -q '"status": "failed"' "$out/manifest.json" || { echo "FAIL: manifest not failed"; cat "$out/manifest.json"; exit 1; }
echo "PASS"
