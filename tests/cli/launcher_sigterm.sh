#!/usr/bin/env bash
# SIGTERM to the launcher (jobs/pi_cluster.sh on a localhost hostfile, 2 ranks), as a user's
# kill or a batch system without --signal sends it: jobs/mpirun_stop.sh turns it into the
# SIGUSR1 that mpirun forwards at once, so every rank finishes its step and writes the stop
# checkpoint: exit 75, "interrupted", and --resume continues to the parameters of an
# uninterrupted run. Then a terminal's Ctrl-C: SIGINT to the launcher's whole process group,
# which must reach the launcher only (mpirun in a session of its own), with the same ending.
# Prints the time from the signal to the end of the job.
# Usage: launcher_sigterm.sh MPIRUN HPDL FIXTURES   (MPIRUN unused: the launcher runs mpirun)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd) hpdl=$2 fx=$3
out=$fx/outputs/sigterm
rm -rf "$out" && mkdir -p "$out"
printf 'localhost slots=2\n' >"$out/hosts"
export HPDL=$hpdl HPDL_RANKS_PER_NODE=2 HPDL_THREADS=1 HPDL_MPIRUN_ARGS=--oversubscribe
launch=(bash "$src/jobs/pi_cluster.sh" "$out/hosts" "$fx/tiny.toml" --set "run.output_dir=\"$out\"")

# stop NAME SIGNAL TARGET: starts a run far longer than the test (the signal surely cuts it)
# as a terminal's foreground job would be (a process group of its own, SIGINT at its
# default; a shell's background job would start with SIGINT ignored), sends SIGNAL to the
# launcher (TARGET "pid") or to its whole process group ("group", as Ctrl-C does) once two
# epochs are logged, and requires exit 75, "interrupted" and a complete checkpoint. Sets took.
stop() {
  local name=$1 sig=$2 target=$3 pid rc t0
  /usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' \
    "${launch[@]}" --set run.name=$name --set train.epochs=1000000 >"$out/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do grep -q "^ *2 " "$out/$name/log.txt" 2>/dev/null && break; sleep 0.01; done
  if [ "$target" = group ]; then kill -$sig -- -$pid; else kill -$sig $pid; fi
  t0=$(date +%s.%N)
  rc=0; wait $pid || rc=$?
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  [ "$rc" -eq 75 ] || { echo "FAIL: SIG$sig to the launcher's $target: exit $rc, expected 75"; tail "$out/$name.log"; exit 1; }
  grep -q '"status": "interrupted"' "$out/$name/manifest.json" || { echo "FAIL: SIG$sig: manifest not interrupted"; exit 1; }
  [ -f "$out/$name/checkpoint.h5" ] && [ ! -e "$out/$name/checkpoint.h5.tmp" ] ||
    { echo "FAIL: SIG$sig: no complete checkpoint"; ls "$out/$name"; exit 1; }
}

stop cut TERM pid
# Finish one epoch past the stop, and compare with an uninterrupted run of that length
# (16 steps an epoch: 256 samples, batch 16).
step=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stopped_at_step'])" "$out/cut/manifest.json")
epochs=$((step / 16 + 2))
"${launch[@]}" --set run.name=cut --set train.epochs=$epochs --resume >/dev/null
"${launch[@]}" --set run.name=full --set train.epochs=$epochs >/dev/null
/usr/bin/python3 "$src/tests/cli/params_equal.py" "$out/full/model.h5" "$out/cut/model.h5" ||
  { echo "FAIL: resumed after SIGTERM differs from the uninterrupted run"; exit 1; }
echo "SIGTERM to the launcher: job ended in $took s (stopped at step $step), exit 75, complete checkpoint, resumed to epoch $epochs == uninterrupted"

# Ctrl-C: SIGINT to the launcher's whole process group must reach the launcher only.
stop ctrlc INT group
echo "Ctrl-C to the launcher's process group: job ended in $took s, exit 75, complete checkpoint"
echo "PASS"
