#!/usr/bin/env bash
# Training goes on when a host dies (jobs/pi_cluster.sh with HPDL_RESTARTS, jobs/elastic.sh),
# on the emulated cluster (scripts/netns_cluster.sh): a synchronous job on 4 hosts loses
# host 4 mid-run (its processes killed and its link down, a board that lost power); the
# launcher finds it gone, restarts on the 3 hosts left with --resume, and the run completes
# within the equivalence tests' tolerance of 1 rank trained without a loss, with one line
# per event and a row in the run directory's restarts.csv. With every host answering, a
# failed job is not restarted; with fewer hosts than HPDL_MIN_HOSTS the launcher gives up.
# A link taken down with the host's processes left running, and a rank killed with every
# host answering, are restarted the same way.
# A Downpour job of 1 server + 3 workers that loses a worker's host finishes with 2 workers,
# and one of 1 + 2 that loses the server's host resumes from the server's checkpoint on the
# 2 hosts left; both end within 1 point of test accuracy of the same job without a loss.
# Usage: netns_elastic.sh SOURCE_DIR HPDL FIXTURES WORK_DIR
set -eu
src=$1 hpdl=$2 fx=$3
source "$(dirname "$0")/netns_lib.sh"
netns_test_setup "$4"
$cluster up 4 --rate 1gbit
args=("$fx/tiny.toml" --set "run.output_dir=\"$work/out\"" --set train.epochs=150
  --set checkpoint.every_steps=20)
hostfile=$HPDL_NETNS_STATE/hostfile from=1
launcher() {  # launcher LOG RESTARTS MIN_HOSTS ARGS...: pi_cluster.sh on the cluster, from host $from
  local log=$1 restarts=$2 min=$3
  shift 3
  HPDL=$hpdl HPDL_RESTARTS=$restarts HPDL_MIN_HOSTS=$min HPDL_PROBE_S=5 \
    timeout 240 $cluster pi_cluster $from "$hostfile" "$@" >"$log" 2>&1
}
lose_host() {  # lose_host N RUN: once RUN's first checkpoint exists, host N loses power
  for _ in $(seq 600); do [ -f "out/$2/checkpoint.h5" ] && break; sleep 0.1; done
  [ -f "out/$2/checkpoint.h5" ] || { echo "FAIL: $2 wrote no checkpoint within 60 s"; exit 1; }
  ip netns exec "hpdl-h$1" ip link set eth0 down
  # shellcheck disable=SC2046
  kill -9 $(ip netns pids "hpdl-h$1") 2>/dev/null || true
}

mpirun --oversubscribe -np 1 "$hpdl" train "${args[@]}" --set run.name=one >/dev/null

# Host 4 dies once the first checkpoint is written.
launcher elastic.log 2 2 "${args[@]}" --set run.name=elastic &
job=$!
lose_host 4 elastic
t0=$(date +%s.%N)
for _ in $(seq 1200); do grep -q "ranks' checkpoint on 3" out/elastic/log.txt 2>/dev/null && break; sleep 0.1; done
again=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
rc=0
wait $job || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: the elastic job exited $rc"; cat elastic.log; exit 1; }
grep -q "pi_cluster: 4 ranks on 4 nodes" elastic.log && grep -q "pi_cluster: 3 ranks on 3 nodes" elastic.log ||
  { echo "FAIL: not 4 then 3 ranks"; cat elastic.log; exit 1; }
grep -q "pi_cluster: lost 10.77.77.14 (exit [0-9]*): restart 1 of 2 with --resume" elastic.log ||
  { echo "FAIL: no line naming the lost host"; cat elastic.log; exit 1; }
grep -q "pi_cluster: left out, not answering: 10.77.77.14" elastic.log
[ "$(grep -c ',1,[0-9]*,10.77.77.14,4$' out/elastic/restarts.csv)" -eq 1 ] ||
  { echo "FAIL: restarts.csv lacks the restart's row"; cat out/elastic/restarts.csv; exit 1; }
grep -q '"status": "complete"' out/elastic/manifest.json
/usr/bin/python3 "$src/tests/cli/params_equal.py" out/one/model.h5 out/elastic/model.h5 2e-5 ||
  { echo "FAIL: the run that lost a host differs from 1 rank"; exit 1; }
echo "host 4 lost: training again on 3 hosts $again s after the loss; final parameters within 2e-5 of 1 rank"

# The same with too few hosts left (HPDL_MIN_HOSTS=4): one line, the job's exit code kept.
launcher minimum.log 2 4 "${args[@]}" --set run.name=minimum && { echo "FAIL: 3 of 4 hosts accepted with HPDL_MIN_HOSTS=4"; exit 1; }
grep -q "pi_cluster: 3 of 4 hosts answer (not: 10.77.77.14), fewer than HPDL_MIN_HOSTS=4: giving up" minimum.log ||
  { echo "FAIL: no giving-up line"; cat minimum.log; exit 1; }
# A failed job with every host answering (a bad key) is not restarted.
ip netns exec hpdl-h4 ip link set eth0 up
launcher bad.log 2 2 "${args[@]}" --set run.name=bad --set optimizer.lrr=1 && { echo "FAIL: a bad key ran"; exit 1; }
grep -q "with every host answering: not restarted" bad.log && [ "$(grep -c 'ranks on' bad.log)" -eq 1 ] ||
  { echo "FAIL: a failed job was restarted"; cat bad.log; exit 1; }
echo "too few hosts: given up in one line; a bad input with every host up: not restarted"

# Host 4's link goes down with its processes left running (a cable pulled): mpirun's
# keepalive ends the job, and it goes on on 3 hosts. Then a rank on host 3 is killed (the
# out-of-memory killer, a stray kill) with every host answering: restarted on all 4.
for loss in link rank; do
  launcher "$loss.log" 2 2 "${args[@]}" --set run.name="$loss" &
  job=$!
  for _ in $(seq 600); do [ -f "out/$loss/checkpoint.h5" ] && break; sleep 0.1; done
  if [ "$loss" = link ]; then
    ip netns exec hpdl-h4 ip link set eth0 down
    expected="lost 10.77.77.14 (exit [0-9]*): restart 1 of 2 with --resume"
  else
    for p in $(ip netns pids hpdl-h3); do
      grep -qa "hpdl.train" "/proc/$p/cmdline" 2>/dev/null && kill -9 "$p"
    done
    expected="the job ended without an hpdl error (exit 137: a rank or mpirun killed), every host answering: restart 1 of 2 with --resume"
  fi
  rc=0
  wait $job || rc=$?
  if [ "$loss" = link ]; then
    # shellcheck disable=SC2046
    kill -9 $(ip netns pids hpdl-h4) 2>/dev/null || true  # the orphans of the run it left
    ip netns exec hpdl-h4 ip link set eth0 up
  fi
  [ "$rc" -eq 0 ] || { echo "FAIL: $loss: the elastic job exited $rc"; cat "$loss.log"; exit 1; }
  grep -q "pi_cluster: $expected" "$loss.log" || { echo "FAIL: $loss: no restart line"; cat "$loss.log"; exit 1; }
  /usr/bin/python3 "$src/tests/cli/params_equal.py" out/one/model.h5 "out/$loss/model.h5" 2e-5 ||
    { echo "FAIL: $loss: the run differs from 1 rank"; exit 1; }
done
echo "a link down without a kill, and a rank killed with every host up: restarted, within 2e-5 of 1 rank"

# Downpour: 1 server + 3 workers on hosts 1-4 (launched from host 1) lose host 4, a worker's;
# 1 server + 2 workers on hosts 1-3, launched from host 4 (mpirun puts rank 0 on the first
# host of the hostfile unless its own host is in it), lose host 1, the server's.
ps=("${args[@]}" --set distributed.mode=\"downpour\" --set optimizer.name=\"sgd\" --set optimizer.lr=0.05)
head -3 "$HPDL_NETNS_STATE/hostfile" >"$work/hosts123"
ip netns exec hpdl-h4 ip link set eth0 up
for case in "4 ps_worker 1 4 3" "1 ps_server 4 3 2"; do
  set -- $case  # the host lost, the run, the launching host, ranks, workers before the loss
  hostfile=$HPDL_NETNS_STATE/hostfile from=$3
  [ "$4" = 4 ] || hostfile=$work/hosts123
  mpirun --oversubscribe -np "$4" "$hpdl" train "${ps[@]}" --set run.name="$2_whole" >/dev/null
  launcher "$2.log" 2 2 "${ps[@]}" --set run.name="$2" &
  job=$!
  lose_host "$1" "$2"
  rc=0
  wait $job || rc=$?
  ip netns exec "hpdl-h$1" ip link set eth0 up
  [ "$rc" -eq 0 ] || { echo "FAIL: $2 exited $rc"; cat "$2.log"; exit 1; }
  grep -q "pi_cluster: lost 10.77.77.1$1 (exit [0-9]*): restart 1 of 2 with --resume" "$2.log" &&
    grep -q "resuming $5 workers' checkpoint on $(($5 - 1)) workers*: every worker starts in epoch" "out/$2/log.txt" ||
    { echo "FAIL: $2: no restart on the hosts left with the workers redistributed"; cat "$2.log" "out/$2/log.txt"; exit 1; }
  grep -q '"status": "complete"' "out/$2/manifest.json"
  acc=$(/usr/bin/python3 "$src/tests/cli/accuracy_close.py" "out/$2_whole" "out/$2" 0.01) ||
    { echo "FAIL: $2: $acc"; exit 1; }
  echo "Downpour 1 + $5, host $1 lost ($2): finished with 1 + $(($5 - 1)), $acc"
done
$cluster down
echo "PASS"
