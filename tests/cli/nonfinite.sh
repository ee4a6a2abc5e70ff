#!/usr/bin/env bash
# The per-step NaN/Inf guard on 2 ranks, with a training file holding one huge finite value
# (the step meeting it overflows): (1) train.nonfinite = "stop" (default) ends every rank
# within seconds naming the step, the layer and the rank whose loss overflowed; the manifest
# says "failed"; the checkpoints written every step before hold only finite numbers.
# (2) "skip": the run completes, the step is skipped with a warning line, parameters finite.
# Usage: nonfinite.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs
run=($mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set data.train_file=\"$fx/huge.h5\" --overwrite)
finite() {  # FILE DATASET: every value finite
  /usr/bin/python3 -c "import h5py, numpy, sys; f = h5py.File(sys.argv[1]); sys.exit(0 if numpy.isfinite(f[sys.argv[2]][()]).all() else 'FAIL: non-finite values in ' + sys.argv[1])" "$1" "$2"
}

rm -rf "$out/nf_stop"
bash "$(dirname "$0")/expect_error.sh" \
  "training diverged at step [0-9]+ \\(epoch 1\\): the gradient is not finite \\(NaN or Inf\\), first in layer parameter 'dense[12]\\.[wb]'; loss not finite on rank\\(s\\) [01]" \
  "${run[@]}" --set run.name=nf_stop --set checkpoint.every_steps=1
grep -q '"status": "failed"' "$out/nf_stop/manifest.json" || { echo "FAIL: manifest not failed"; exit 1; }
grep -q "^error: training diverged" "$out/nf_stop/log.txt" || { echo "FAIL: no error in log.txt"; exit 1; }
for f in "$out/nf_stop"/checkpoint*.h5; do
  [ -f "$f" ] || continue
  finite "$f" params
done
echo "(1) stop: $(grep '^error:' "$out/nf_stop/log.txt")"

rm -rf "$out/nf_skip"
"${run[@]}" --set run.name=nf_skip --set train.nonfinite=\"skip\" >/dev/null
grep -q '"status": "complete"' "$out/nf_skip/manifest.json" || { echo "FAIL: skip run not complete"; exit 1; }
n=$(grep -c "^warning: step [0-9]* (epoch [0-9]*): the gradient is not finite.*step skipped" "$out/nf_skip/log.txt" || true)
[ "$n" -ge 1 ] || { echo "FAIL: no skipped-step warning"; cat "$out/nf_skip/log.txt"; exit 1; }
finite "$out/nf_skip/model.h5" params
echo "(2) skip: $n steps skipped, run complete, parameters finite"
echo "PASS"
