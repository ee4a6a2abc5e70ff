#!/usr/bin/env bash
# A rank that stops (kill -STOP) mid-training must not hang the job: with run.watchdog_s = 3
# the job ends, non-zero, with one line naming the waiting rank, the operation, and the
# stopped rank. Sync (2 ranks, rank 1 stopped; 4 ranks, rank 2 stopped: the ranks that
# arrived are not named) and Downpour (1 server + 1 worker, the worker stopped: the
# server's loop is bounded too; and the server stopped: one line naming it); a rank stopped
# before MPI has started (HPDL_MPI_START_S). Prints the time from the stop to the end (the target is the
# bound + 5 s; the test fails only past bound + 15 s, so a loaded machine does not fail it).
# The run directory's manifest says "failed" with the same error, and log.txt has it.
# Usage: stopped_rank.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
set +e  # each failing command is checked below
bound=3
rank_pid() {  # the pid of hpdl's rank R among the children of mpirun
  local p
  for p in $(pgrep -f "$hpdl train .*run.name=$2"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
# Waits for JOB to end after VICTIM was stopped at T0, bounded (a hang is a failure, not a
# stuck test); sets took, the seconds from the stop to the end. WHAT: the stop, in words.
await_end() {  # JOB VICTIM T0 WHAT
  for _ in $(seq $(( (bound + 15) * 10 ))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then
    kill -KILL "$2" "$1" 2>/dev/null
    echo "FAIL: $name: the job still runs $((bound + 15)) s after $4"
    exit 1
  fi
  kill -KILL "$2" 2>/dev/null || true
  took=$(awk -v a="$3" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
check() {  # NAME RANKS VICTIM REGEX EXTRA-ARGS...
  local name=$1 np=$2 rank=$3 regex=$4
  shift 4
  local log=$fx/stopped_$name.log
  rm -rf "$fx/outputs/$name"  # an earlier run's log.txt would end the wait for "epoch" at once
  $mpirun -np "$np" "$hpdl" train "$fx/tiny.toml" --set run.name="$name" --overwrite \
    --set run.watchdog_s=$bound --set train.epochs=100000 "$@" >"$log" 2>&1 &
  local job=$! victim=""
  for _ in $(seq 200); do
    victim=$(rank_pid "$rank" "$name")
    [ -n "$victim" ] && grep -q "epoch" "$fx/outputs/$name/log.txt" 2>/dev/null && break
    sleep 0.05
  done
  [ -n "$victim" ] || { echo "FAIL: $name: rank $rank not found"; kill $job; cat "$log"; exit 1; }
  sleep 0.5
  kill -STOP "$victim"
  local rc=0
  await_end $job "$victim" "$(date +%s.%N)" "rank $rank stopped"
  wait $job || rc=$?
  [ "$rc" -ne 0 ] || { echo "FAIL: $name: exit 0"; exit 1; }
  grep -Eq "$regex" "$log" || { echo "FAIL: $name: no line matching /$regex/"; cat "$log"; exit 1; }
  local lines
  lines=$(grep -c "hpdl: error:" "$log")
  [ "$lines" -eq 1 ] || { echo "FAIL: $name: $lines error lines, not one"; cat "$log"; exit 1; }
  # The run directory says how it ended: the manifest "failed" with the error, the log too.
  /usr/bin/python3 - "$fx/outputs/$name/manifest.json" "$regex" <<'PY' || { echo "FAIL: $name: manifest"; exit 1; }
import json, re, sys
m = json.load(open(sys.argv[1]))
assert m["status"] == "failed", m["status"]
assert re.search(sys.argv[2], m["error"]), m.get("error")
PY
  grep -q "error: rank 0 waited" "$fx/outputs/$name/log.txt" || { echo "FAIL: $name: log.txt has no error"; exit 1; }
  echo "$name: rank $rank stopped -> job ended in ${took} s (bound ${bound} s), exit $rc: $(grep -E "$regex" "$log" | head -1)"
  awk -v t="$took" -v b=$bound 'BEGIN { exit !(t <= b + 15) }' || { echo "FAIL: $name: took longer than the bound + 15 s"; exit 1; }
}
stopped="is stopped or hung \\(no heartbeat for 1.2 s; (last finished:|it waits in) .* at step [0-9]+\\)$"
check sync 2 1 "rank 0 waited [0-9.]+ s in .* at step [0-9]+ .*: rank 1 $stopped"
check sync4 4 2 "rank 0 waited [0-9.]+ s in .* at step [0-9]+ .*: rank 2 $stopped"
check downpour 2 1 "rank 0 waited [0-9.]+ s in waiting for any worker's push .*: rank 1 $stopped" \
  --set distributed.mode=downpour --set optimizer.name=sgd

# The parameter server stopped (1 server, 2 workers): the workers block in one-sided
# operations that cannot poll; the job still ends within the bound with one line, from the
# first worker, naming the server (its run directory cannot say so: rank 0 is stopped).
name=ps_server log=$fx/stopped_ps_server.log
rm -rf "$fx/outputs/$name"
$mpirun -np 3 "$hpdl" train "$fx/tiny.toml" --set run.name=$name --overwrite --set run.watchdog_s=$bound \
  --set train.epochs=100000 --set distributed.mode=downpour --set optimizer.name=sgd >"$log" 2>&1 &
job=$!
for _ in $(seq 200); do
  r0=$(rank_pid 0 $name)
  [ -n "$r0" ] && grep -q "epoch" "$fx/outputs/$name/log.txt" 2>/dev/null && break
  sleep 0.05
done
[ -n "$r0" ] || { echo "FAIL: $name: rank 0 not found"; kill $job; exit 1; }
sleep 0.5
kill -STOP "$r0"
await_end $job "$r0" "$(date +%s.%N)" "the server stopped"
lines=$(grep -c "hpdl: error:" "$log" || true)
grep -Eq "hpdl: error: rank 1 waited [0-9.]+ s in .*: no answer from rank 0, the parameter server \(stopped, hung or gone\)" "$log" &&
  [ "$lines" -eq 1 ] || { echo "FAIL: $name: $lines error lines, or none naming the server"; cat "$log"; exit 1; }
echo "$name: the server stopped -> job ended in ${took} s: $(grep "hpdl: error:" "$log")"

# A job suspended whole (every rank stopped, as Slurm's suspend or gang scheduling does) and
# resumed after twice the bound, one rank a second after the other (nodes do not resume at
# one instant), must go on: frozen time does not count against a wait.
name=suspended log=$fx/stopped_suspended.log
rm -rf "$fx/outputs/$name"
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=$name --overwrite \
  --set run.watchdog_s=$bound --set train.epochs=100000 >"$log" 2>&1 &
job=$!
for _ in $(seq 200); do
  r0=$(rank_pid 0 $name) r1=$(rank_pid 1 $name)
  [ -n "$r0" ] && [ -n "$r1" ] && grep -q "epoch" "$fx/outputs/$name/log.txt" 2>/dev/null && break
  sleep 0.05
done
[ -n "$r0" ] && [ -n "$r1" ] || { echo "FAIL: $name: ranks not found"; kill $job; exit 1; }
kill -STOP "$r0" "$r1"
sleep $((2 * bound))
kill -CONT "$r0"
sleep 1
kill -CONT "$r1"
sleep $((bound + 2))
if ! kill -0 $job 2>/dev/null; then
  echo "FAIL: $name: the resumed job ended"; cat "$log"; exit 1
fi
kill -USR1 $job  # the documented way to stop a job with a checkpoint
rc=0
for _ in $(seq 150); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
kill -0 $job 2>/dev/null && { kill -KILL $job; echo "FAIL: $name: SIGUSR1 did not end it"; exit 1; }
wait $job || rc=$?
[ "$rc" -eq 75 ] || { echo "FAIL: $name: exit $rc after SIGUSR1, not 75"; cat "$log"; exit 1; }
echo "$name: all ranks stopped for $((2 * bound)) s and resumed -> still training $((bound + 2)) s later; SIGUSR1 -> exit 75"

# A rank stopped before MPI has started (as it is launched): MPI_Init waits for every rank
# without a limit of its own; HPDL_MPI_START_S bounds it, one line, the job ends. (Should
# the rank get past MPI_Init first, the watchdog's line ends it instead.)
name=at_start log=$fx/stopped_at_start.log
rm -rf "$fx/outputs/$name"
HPDL_MPI_START_S=$bound $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=$name --overwrite \
  --set run.watchdog_s=$bound --set train.epochs=100000 >"$log" 2>&1 &
job=$! r1=""
for _ in $(seq 500); do
  r1=$(rank_pid 1 $name)
  [ -n "$r1" ] && break
  sleep 0.01
done
[ -n "$r1" ] || { echo "FAIL: $name: rank 1 not found"; kill $job; exit 1; }
kill -STOP "$r1"
await_end $job "$r1" "$(date +%s.%N)" "rank 1 stopped at its start"
rc=0
wait $job || rc=$?
lines=$(grep -c "hpdl: error:" "$log" || true)
[ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] &&
  grep -Eq "hpdl: error: rank 0: MPI did not start within $bound s \(HPDL_MPI_START_S\)|hpdl: error: rank 0 waited" "$log" ||
  { echo "FAIL: $name: exit $rc, $lines error lines"; cat "$log"; exit 1; }
echo "$name: rank 1 stopped at its start -> job ended in ${took} s, exit $rc: $(grep "hpdl: error:" "$log")"
echo "PASS"
