#!/usr/bin/env bash
# A long trace is work, not a hang: every step traced (profile.repeat = 0) over 1500 epochs
# (730,000 events, 160 MiB of JSON: seconds to write) with run.watchdog_s = 1. Rank 0 is
# busy writing longer than the bound; the run must still end complete, with model.h5
# (written before the traces) and the traces. On d8ff6d2 the watchdog ended it ("another
# rank is late or gone"), without model.h5.
# Usage: long_trace.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/long_trace
rm -rf "$out"
rc=0
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=\"long_trace\" --set profile.enabled=true \
  --set profile.repeat=0 --set profile.ceilings=false --set train.epochs=1500 --set run.watchdog_s=1 \
  >"$fx/long_trace.log" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; grep "error" "$fx/long_trace.log"; exit 1; }
grep -q '"status": "complete"' "$out/manifest.json" && [ -f "$out/model.h5" ] && [ -f "$out/trace/merged.json" ] ||
  { echo "FAIL: not complete, or model.h5 or the merged trace missing"; ls "$out"; exit 1; }
grep "^profile:" "$fx/long_trace.log"
echo "PASS"
