#!/usr/bin/env bash
# The launcher (jobs/mpirun_stop.sh, behind scripts/main.sh and jobs/pi_cluster.sh) leaves
# none of Open MPI's files behind, whether the run ends normally or mpirun and its ranks are
# killed (SIGKILL): no /dev/shm/vader_segment.*, no session directory in /tmp, no folder of
# its own. (Ranks killed under a living mpirun are cleaned up by mpirun itself.)
# Usage: launcher_leftovers.sh MPIRUN HPDL FIXTURES
set -eu
hpdl=$2 fx=$3
launch="bash $(dirname "$0")/../../jobs/mpirun_stop.sh"
tmp=${TMPDIR:-/tmp}
files() { ls -d /dev/shm/vader_segment.* "$tmp"/ompi.* "$tmp"/hpdl-mpirun.* 2>/dev/null | sort || true; }
before=$(files)
left() {
  local now
  now=$(comm -13 <(echo "$before") <(files))
  [ -z "$now" ] || { echo "FAIL: $1 left: $now"; exit 1; }
}
$launch -np 2 --oversubscribe --bind-to none "$hpdl" train "$fx/tiny.toml" --set run.name=\"leftovers\" \
  --overwrite >/dev/null
left "a complete run"
echo "a complete run: nothing left"

out=$fx/outputs/leftovers_killed
rm -rf "$out"
$launch -np 2 --oversubscribe --bind-to none "$hpdl" train "$fx/tiny.toml" --set run.name=\"leftovers_killed\" \
  --set train.epochs=1000000 >/dev/null 2>&1 &
job=$!
for _ in $(seq 400); do [ "$({ wc -l <"$out/metrics.csv"; } 2>/dev/null || echo 0)" -ge 2 ] && break; sleep 0.05; done
[ -n "$(files | grep vader_segment || true)$(ls "$tmp"/hpdl-mpirun.*/vader_segment.* 2>/dev/null || true)" ] ||
  { echo "FAIL: no shared-memory segment seen while the run trained (the test sees nothing)"; exit 1; }
# mpirun and its ranks at once, as the OOM killer or `kill -9` of the job does.
pkill -KILL -f "^(mpirun|$hpdl) .*leftovers_killed" || true
rc=0
wait $job || rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: a killed run exited 0"; exit 1; }
left "a run whose mpirun and ranks were killed (exit $rc)"
echo "mpirun and ranks killed (launcher exit $rc): nothing left"
echo "PASS"
