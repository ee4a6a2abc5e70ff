#!/usr/bin/env bash
# A stop signal before main(): a library preloaded into each rank raises SIGTERM in its
# constructor, as a SIGTERM does that arrives while the shared libraries start (the CUDA
# libraries' constructors take 0.1 s). train must record it and stop at its first step the
# usual way (exit 75, manifest "interrupted", a checkpoint); every other command keeps
# SIGTERM's default action (killed, exit 143).
# Usage: early_signal.sh MPIRUN HPDL FIXTURES RAISE_LIBRARY
set -eu
mpirun="$1 --oversubscribe --bind-to none" hpdl=$2 fx=$3 raise=$4
out=$fx/outputs/early_signal
rm -rf "$out"
rc=0
$mpirun -np 2 -x LD_PRELOAD="$raise" "$hpdl" train "$fx/tiny.toml" --set run.name=\"early_signal\" \
  --set train.epochs=1000 >"$fx/early_signal.log" 2>&1 || rc=$?
[ "$rc" -eq 75 ] || { echo "FAIL: train exited $rc, expected 75"; cat "$fx/early_signal.log"; exit 1; }
grep -q '"status": "interrupted"' "$out/manifest.json" && grep -q '"stopped_by": "SIGTERM"' "$out/manifest.json" ||
  { echo "FAIL: manifest not interrupted by SIGTERM"; cat "$out/manifest.json"; exit 1; }
[ -f "$out/checkpoint.h5" ] || { echo "FAIL: no checkpoint"; exit 1; }
echo "train: $(grep -o 'stopped by SIGTERM[^;]*' "$out/log.txt" | head -1), exit 75"
rc=0
LD_PRELOAD="$raise" "$hpdl" check "$fx/tiny.toml" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 143 ] || { echo "FAIL: check exited $rc, expected 143 (killed by SIGTERM)"; exit 1; }
echo "check: killed by SIGTERM (exit 143)"
echo "PASS"
