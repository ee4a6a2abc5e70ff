#!/usr/bin/env bash
# run.wait: a rank that sleeps between its tests while it waits trains the same bits as one
# that spins (2 ranks, sync); the manifest says which each run used and why; "auto" sleeps
# where the ranks outnumber the cores (4 ranks x 2 threads here, on at most a few cores),
# and spins where ranks bound to a core each have the cores between them (mpirun's default
# binding for 2 ranks: each rank sees one core, the node's ranks see two).
# Usage: wait_policy.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/wait
rm -rf "$out"
run=(train "$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set train.epochs=2)
$mpirun -np 2 -x OMP_NUM_THREADS=1 "$hpdl" "${run[@]}" --set run.name=spin --set 'run.wait="spin"' >/dev/null
$mpirun -np 2 -x OMP_NUM_THREADS=1 "$hpdl" "${run[@]}" --set run.name=sleep --set 'run.wait="sleep"' >/dev/null
grep -q '"wait": "spin: run.wait"' "$out/spin/manifest.json"
grep -q '"wait": "sleep: run.wait"' "$out/sleep/manifest.json"
/usr/bin/python3 "$(dirname "$0")/params_equal.py" "$out/spin/model.h5" "$out/sleep/model.h5"
$mpirun -np 4 -x OMP_NUM_THREADS=2 "$hpdl" "${run[@]}" --set run.name=auto >/dev/null
grep -Eq '"wait": "sleep: 4 ranks x 2 threads on [0-9]+ cores"' "$out/auto/manifest.json" ||
  { echo "FAIL: auto did not sleep with 8 threads: $(grep '"wait"' "$out/auto/manifest.json")"; exit 1; }
if [ "$(nproc)" -ge 2 ]; then
  ${mpirun% --bind-to none} --bind-to core -np 2 -x OMP_NUM_THREADS=1 "$hpdl" "${run[@]}" \
    --set run.name=bound >/dev/null
  grep -q '"wait": "spin: 2 ranks x 1 threads on [0-9]* cores"' "$out/bound/manifest.json" ||
    { echo "FAIL: auto did not spin with 2 ranks bound to a core each: $(grep '"wait"' "$out/bound/manifest.json")"; exit 1; }
fi
echo "PASS: sleeping and spinning ranks train the same bits; auto sleeps where threads outnumber cores, spins where ranks are bound apart"
