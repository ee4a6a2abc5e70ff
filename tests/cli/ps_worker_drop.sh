#!/usr/bin/env bash
# A parameter-server worker that dies does not end the job (issue 65, item 3): Downpour with
# 1 server + 3 workers under `mpirun --enable-recovery`, checkpoints every second; one worker
# (rank 2) is killed (SIGKILL) mid-training. With run.watchdog_s = 8 the server drops it after
# 4 s of silence with one log line naming it, the run finishes on the 2 workers left, exit 0,
# the manifest says "complete" and lists the worker that left, ps_workers.csv has its row
# (left_s), and a checkpoint written after the drop resumes on 1 + 2 ranks. A worker stopped
# (SIGSTOP) is dropped the same way and, continued, leaves alone with one line. A worker killed
# when too few would be left (1 + 1, distributed.min_workers = 1) still ends the job through
# the watchdog (tests/cli/stopped_rank.sh).
# Usage: ps_worker_drop.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
set +e
args=(--set distributed.mode=downpour --set optimizer.name=sgd --set run.watchdog_s=8
  --set checkpoint.every_s=1 --set train.progress=false --set train.batch=4)
# lose NAME RANK SIGNAL: runs 1 + 3 and, after its first checkpoint, sends SIGNAL to RANK;
# a stopped rank is continued once dropped. Checks the drop line and exit 0.
lose() {
  local name=$1 rank=$2 sig=$3 log=$fx/$1.log out=$fx/outputs/$1 victim="" p
  rm -rf "$out"
  $mpirun --enable-recovery -np 4 "$hpdl" train "$fx/tiny.toml" --set run.name="$name" --overwrite \
    --set train.epochs=5000 "${args[@]}" >"$log" 2>&1 &
  local job=$!
  for _ in $(seq 200); do
    for p in $(pgrep -f "$hpdl train .*run.name=$name"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && victim=$p
    done
    [ -n "$victim" ] && grep -q "^checkpoint" "$out/log.txt" 2>/dev/null && break
    sleep 0.05
  done
  [ -n "$victim" ] || { echo "FAIL: $name: rank $rank not found"; kill $job; cat "$log"; exit 1; }
  local t0
  t0=$(date +%s.%N)
  kill -"$sig" "$victim"
  for _ in $(seq 1200); do
    grep -q "dropped" "$out/log.txt" 2>/dev/null && break
    kill -0 $job 2>/dev/null || break
    sleep 0.05
  done
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ "$sig" != STOP ] || kill -CONT "$victim"
  for _ in $(seq 1200); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then
    kill -KILL $job; echo "FAIL: $name: the job still runs 120 s after the loss"; cat "$log"; exit 1
  fi
  wait $job
  local rc=$?
  [ "$rc" -eq 0 ] || { echo "FAIL: $name: exit $rc"; cat "$log"; exit 1; }
  local w=$((rank - 1))
  line=$(grep -E "worker $w \(rank $rank\) dropped: silent for [0-9]+ s .* training goes on with 2 of 3 workers" "$out/log.txt")
  [ -n "$line" ] || { echo "FAIL: $name: no drop line in log.txt"; cat "$out/log.txt"; exit 1; }
  echo "$name: SIG$sig to rank $rank -> dropped after ${took} s (bound 4 s): $line"
}

# A stopped worker is dropped, continued, and told to leave: it ends alone, exit 0.
lose ps_drop_stopped 3 STOP
grep -q "hpdl: rank 3: the parameter servers dropped this worker" "$fx/ps_drop_stopped.log" ||
  { echo "FAIL: the continued worker did not leave with its line"; cat "$fx/ps_drop_stopped.log"; exit 1; }
grep -q '"status": "complete"' "$fx/outputs/ps_drop_stopped/manifest.json" ||
  { echo "FAIL: ps_drop_stopped: not complete"; exit 1; }

name=ps_drop log=$fx/ps_drop.log out=$fx/outputs/ps_drop
lose ps_drop 2 KILL
/usr/bin/python3 - "$out" <<'PY' || { echo "FAIL: manifest or ps_workers.csv"; cat "$log"; exit 1; }
import csv, json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
assert m["status"] == "complete", m["status"]
left = m["parameter_server"]["workers_left"]
assert [w["rank"] for w in left] == [2] and left[0]["left_s"] > 0, left
assert m["parameter_server"]["workers"] == 2, m["parameter_server"]["workers"]
rows = {r["rank"]: r for r in csv.DictReader(open(d + "/ps_workers.csv"))}
assert sorted(rows) == ["1", "2", "3"], sorted(rows)
assert rows["2"]["left_s"] and not rows["1"]["left_s"] and not rows["3"]["left_s"], rows
print("manifest: complete, workers_left", left)
PY
# A checkpoint written after the drop (2 workers) resumes on 1 + 2 ranks.
grep -q "^checkpoint" <(sed -n '/dropped/,$p' "$out/log.txt") ||
  { echo "FAIL: no checkpoint after the drop"; cat "$out/log.txt"; exit 1; }
# Its workers' slices were 3 workers' slices: the positions are redistributed, and said so.
cp "$out/checkpoint.h5" "$fx/ps_drop_checkpoint.h5"
verdict=$("$hpdl" check "$fx/tiny.toml" --ranks 3 --resume "$fx/ps_drop_checkpoint.h5" "${args[@]}" 2>&1 | grep "^resume")
echo "$verdict" | grep -q "2 workers' checkpoint on 2: the workers' positions are redistributed" ||
  { echo "FAIL: hpdl check --resume: $verdict"; exit 1; }
$mpirun -np 3 "$hpdl" train "$fx/tiny.toml" --set run.name=${name}_resumed --overwrite \
  --resume-from "$fx/ps_drop_checkpoint.h5" --set train.epochs=5010 "${args[@]}" --set run.watchdog_s=60 >"$log.resume" 2>&1 ||
  { echo "FAIL: resume on 3 ranks"; cat "$log.resume"; exit 1; }
grep -q "resuming 2 workers' checkpoint on 2 workers: every worker starts in epoch" "${out}_resumed/log.txt" ||
  { echo "FAIL: the resume did not redistribute the positions"; cat "${out}_resumed/log.txt"; exit 1; }
grep -E "^final: .* after 5010 epochs" "${out}_resumed/log.txt" ||
  { echo "FAIL: resumed run's final line"; cat "$log.resume"; exit 1; }
echo "ok: the job went on with 2 workers and its checkpoint resumed on 1 + 2 ranks"
