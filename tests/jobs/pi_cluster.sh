#!/usr/bin/env bash
# The Pi-cluster launcher with a hostfile of localhost slots: 2 ranks (ppr 2 per node) train
# the tiny model to completion; a hostfile that does not parse is refused, naming the line,
# and starts nothing. Usage: pi_cluster.sh SOURCE_DIR HPDL FIXTURES WORK_DIR
set -u
src=$1 hpdl=$2 fx=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export HPDL=$hpdl HPDL_RANKS_PER_NODE=2 HPDL_THREADS=1 HPDL_MPIRUN_ARGS=--oversubscribe
printf '%s\n' "# one test node" "localhost slots=2   # two ranks" "" > hosts
out=$(bash "$src/jobs/pi_cluster.sh" hosts "$fx/tiny.toml" --set run.output_dir='"out"' --set train.epochs=2 2>&1) ||
  { echo "FAIL: launcher run failed"; echo "$out"; exit 1; }
echo "$out" | grep -q "pi_cluster: 2 ranks on 1 nodes (2 per node, 1 threads each)" || { echo "FAIL: $out"; exit 1; }
grep -q '"status": "complete"' out/tiny/manifest.json && grep -q '"ranks": 2' out/tiny/manifest.json ||
  { echo "FAIL: run not complete on 2 ranks"; exit 1; }
echo "launcher: 2 ranks on localhost completed"
printf '%s\n' "localhost slots=2" "node-2 slots=two" > bad_hosts
if err=$(bash "$src/jobs/pi_cluster.sh" bad_hosts "$fx/tiny.toml" --set run.output_dir='"bad"' 2>&1); then
  echo "FAIL: bad hostfile accepted"; exit 1
fi
echo "$err" | grep -q "bad_hosts:2: cannot parse 'node-2 slots=two' (expected 'HOST \[slots=N\]'" ||
  { echo "FAIL: message: $err"; exit 1; }
[ ! -e bad ] || { echo "FAIL: a run started despite the bad hostfile"; exit 1; }
echo "bad hostfile refused: $err"
echo "PASS"
