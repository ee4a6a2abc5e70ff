#!/usr/bin/env bash
# A tiny 2-rank run completes and writes every output; a second run into the same
# directory is refused and leaves the completed run untouched; --overwrite replaces it.
# Usage: completed_run.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/tiny
rm -rf "$out"
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml"
for f in config.toml manifest.json metrics.csv log.txt model.h5 confusion.csv; do
  [ -s "$out/$f" ] || { echo "FAIL: missing $out/$f"; exit 1; }
done
grep -q '"status": "complete"' "$out/manifest.json"
grep -q '"ranks": 2' "$out/manifest.json"
[ "$(wc -l < "$out/metrics.csv")" -eq 4 ] || { echo "FAIL: metrics.csv should have a header and 3 epochs"; exit 1; }
acc=$(tail -1 "$out/metrics.csv" | cut -d, -f5)
python3 -c "import sys; a=float('$acc'); sys.exit(0 if a > 0.9 else 'FAIL: tiny model accuracy %s <= 0.9' % a)"
before=$(md5sum "$out/manifest.json" "$out/metrics.csv" "$out/model.h5")
bash "$(dirname "$0")/expect_error.sh" "already holds a completed run" $mpirun -np 2 "$hpdl" train "$fx/tiny.toml"
after=$(md5sum "$out/manifest.json" "$out/metrics.csv" "$out/model.h5")
[ "$before" = "$after" ] || { echo "FAIL: the refused run changed the completed run"; exit 1; }
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --overwrite --set train.epochs=1 >/dev/null
[ "$(wc -l < "$out/metrics.csv")" -eq 2 ] || { echo "FAIL: --overwrite did not replace the run"; exit 1; }
echo "PASS"
