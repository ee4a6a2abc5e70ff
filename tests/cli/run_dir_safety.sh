#!/usr/bin/env bash
# The run directory is safe: (1) a run that fails validation leaves an earlier
# (interrupted) run's log.txt and metrics.csv untouched; (2) a directory locked by another
# run is refused, naming that run's pid; (3) a run that fails after set-up writes the error
# into log.txt and marks its manifest "status": "failed".
# Usage: run_dir_safety.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs/safety
# shellcheck disable=SC2206
run=($mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=\"safety\")

# (1) validation fails (labels out of range) after the directory exists.
rm -rf "$out" && mkdir -p "$out"
echo "earlier log" >"$out/log.txt"
echo "earlier metrics" >"$out/metrics.csv"
$expect "is outside the class range" "${run[@]}" --set data.train_file=\"$fx/bad_labels.h5\"
[ "$(cat "$out/log.txt")" = "earlier log" ] && [ "$(cat "$out/metrics.csv")" = "earlier metrics" ] ||
  { echo "FAIL: a run refused at validation changed the earlier run's files"; exit 1; }
echo "(1) refused run left log.txt and metrics.csv intact"

# (2) another process holds the directory's lock.
# (One process holds it, so killing that process releases it.)
(exec 8>"$out/.lock" && flock 8 && exec sleep 30) >/dev/null 2>&1 &
holder=$!
sleep 0.5
$expect "output directory .*safety is in use by another hpdl run" "${run[@]}"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
[ "$(cat "$out/log.txt")" = "earlier log" ] || { echo "FAIL: the locked-out run wrote log.txt"; exit 1; }
echo "(2) locked directory refused"

# (2b) a damaged manifest.json counts as a completed run: not overwritten without --overwrite.
echo '{"status": "compl' >"$out/manifest.json"
$expect "output directory .*safety already holds a completed run \\(its manifest.json says so or cannot be read" "${run[@]}"
[ "$(cat "$out/log.txt")" = "earlier log" ] || { echo "FAIL: a damaged manifest let a run in"; exit 1; }
echo "(2b) damaged manifest refused without --overwrite"

# (3) model.h5 cannot be written (a non-empty directory stands in its place): the run fails
# at its end, after training.
rm -rf "$out" && mkdir -p "$out/model.h5/x"
if "${run[@]}" --set train.epochs=1 >"$fx/safety.log" 2>&1; then echo "FAIL: the run succeeded"; exit 1; fi
grep -q '"status": "failed"' "$out/manifest.json" || { echo "FAIL: manifest not failed"; cat "$out/manifest.json"; exit 1; }
grep -q '"error": ".*model.h5' "$out/manifest.json" || { echo "FAIL: manifest has no error naming model.h5"; exit 1; }
grep -q "^error: .*model.h5" "$out/log.txt" || { echo "FAIL: log.txt has no error line"; cat "$out/log.txt"; exit 1; }
echo "(3) failed run: $(grep '^error:' "$out/log.txt")"
echo "PASS"
