#!/usr/bin/env bash
# A rank that stops (kill -STOP) mid-training must not hang the job: with run.watchdog_s = 3
# the job ends, non-zero, with a line naming the waiting rank and the operation. Sync (2
# ranks, rank 1 stopped) and Downpour (1 server + 1 worker, the worker stopped: the server's
# loop is bounded too). Prints the time from the stop to the end (the target is the bound
# + 5 s; the test fails only past bound + 15 s, so a loaded machine does not fail it).
# Usage: stopped_rank.sh MPIRUN HPDL FIXTURES
set -u
mpirun="$1 --oversubscribe --bind-to none" hpdl=$2 fx=$3
bound=3
rank_pid() {  # the pid of hpdl's rank R among the children of mpirun
  local p
  for p in $(pgrep -f "$hpdl train .*run.name=$2"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
check() {  # NAME REGEX EXTRA-ARGS...
  local name=$1 regex=$2
  shift 2
  local log=$fx/stopped_$name.log
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name="$name" --overwrite \
    --set run.watchdog_s=$bound --set train.epochs=100000 "$@" >"$log" 2>&1 &
  local job=$! victim=""
  for _ in $(seq 200); do
    victim=$(rank_pid 1 "$name")
    [ -n "$victim" ] && grep -q "epoch" "$fx/outputs/$name/log.txt" 2>/dev/null && break
    sleep 0.05
  done
  [ -n "$victim" ] || { echo "FAIL: $name: rank 1 not found"; kill $job; cat "$log"; exit 1; }
  sleep 0.5
  kill -STOP "$victim"
  local t0 rc=0
  t0=$(date +%s.%N)
  # Bounded here too: a hang is a failure, not a stuck test.
  for _ in $(seq $(( (bound + 15) * 10 ))); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then
    kill -KILL "$victim" $job 2>/dev/null
    echo "FAIL: $name: the job still runs $((bound + 15)) s after rank 1 stopped"
    exit 1
  fi
  wait $job || rc=$?
  local took
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ "$rc" -ne 0 ] || { echo "FAIL: $name: exit 0"; exit 1; }
  grep -Eq "$regex" "$log" || { echo "FAIL: $name: no line matching /$regex/"; cat "$log"; exit 1; }
  echo "$name: rank 1 stopped -> job ended in ${took} s (bound ${bound} s), exit $rc: $(grep -E "$regex" "$log" | head -1)"
  awk -v t="$took" -v b=$bound 'BEGIN { exit !(t <= b + 15) }' || { echo "FAIL: $name: took longer than the bound + 15 s"; exit 1; }
}
check sync "rank 0 waited [0-9.]+ s in .* at step [0-9]+"
check downpour "rank 0 waited [0-9.]+ s in waiting for any worker's push" \
  --set distributed.mode=downpour --set optimizer.name=sgd
echo "PASS"
