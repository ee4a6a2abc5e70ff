#!/usr/bin/env bash
# The emulated multi-host cluster (scripts/netns_cluster.sh) with real OpenMPI across real
# network namespaces: it starts and stops cleanly (the machine's own links untouched, no
# namespace left behind, also after a failed start); a 2-host sync run of the tiny model
# completes with every gradient allreduce crossing the rate-limited links (tc counters);
# jobs/pi_cluster.sh runs on the cluster's multi-host hostfile, and ends in seconds with one
# line when a host's link goes down.
# Usage: netns_cluster.sh SOURCE_DIR HPDL FIXTURES WORK_DIR
set -eu
src=$1 hpdl=$2 fx=$3
source "$(dirname "$0")/netns_lib.sh"
netns_test_setup "$4"
links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)

# A failed start leaves nothing behind; bad arguments are refused.
if $cluster up 2 --rate nonsense >start.log 2>&1; then echo "FAIL: a bad rate was accepted"; exit 1; fi
[ -z "$(ip netns list | grep '^hpdl-' || true)" ] || { echo "FAIL: namespaces left after a failed start"; ip netns list; exit 1; }
if $cluster up 0 2>err.txt; then echo "FAIL: 0 hosts accepted"; exit 1; fi
grep -q "N must be 1..64, got '0'" err.txt

$cluster up 2 --rate 100mbit
[ "$(wc -l <"$HPDL_NETNS_STATE/hostfile")" -eq 2 ]
ip netns exec hpdl-h1 tc qdisc show dev eth0 | grep -q "tbf .*rate 100Mbit"

# 2 hosts x 1 rank: sync training over TCP between the namespaces.
sent_before=$($cluster status | awk '/^host 2/{print $5}')
$cluster mpirun -np 2 -x OMP_NUM_THREADS=1 "$hpdl" train "$fx/tiny.toml" \
  --set "run.output_dir=\"$work/out\"" --set train.epochs=3 >run.log 2>&1 ||
  { echo "FAIL: 2-host run failed"; cat run.log; exit 1; }
grep -q '"status": "complete"' out/tiny/manifest.json
grep -q '"hpdl-h1"' out/tiny/manifest.json && grep -q '"hpdl-h2"' out/tiny/manifest.json ||
  { echo "FAIL: the manifest does not name both hosts"; grep -A4 '"hosts"' out/tiny/manifest.json; exit 1; }
sent_after=$($cluster status | awk '/^host 2/{print $5}')
# 3 epochs x 16 steps of 1108 float gradients (4432 bytes) at least, from host 2 to host 1.
need=$((48 * 4432))
[ $((sent_after - sent_before)) -ge $need ] ||
  { echo "FAIL: host 2 sent $((sent_after - sent_before)) bytes over its link, expected >= $need"; $cluster status; exit 1; }
echo "2-host run: host 2 sent $((sent_after - sent_before)) bytes through its 100 Mbit link (>= $need)"

# The Pi-cluster launcher on the cluster's hostfile (one rank per host).
HPDL=$hpdl $cluster pi_cluster 1 "$HPDL_NETNS_STATE/hostfile" "$fx/tiny.toml" \
  --set "run.output_dir=\"$work/pi\"" --set train.epochs=2 >pi.log 2>&1 ||
  { echo "FAIL: pi_cluster.sh on the emulated cluster"; cat pi.log; exit 1; }
grep -q "pi_cluster: 2 ranks on 2 nodes" pi.log
grep -q '"status": "complete"' pi/tiny/manifest.json
echo "jobs/pi_cluster.sh: 2 ranks on 2 hosts completed"

# A host whose link goes down (no reset, nothing): the launcher must end, with one line,
# within the bound and a few seconds. With a short run.watchdog_s hpdl names the rank first
# (then the launcher ends an mpirun that still waits for the dead host's daemon); with the
# default 600 s mpirun's TCP keepalive finds the dead host and the launcher's one line
# names it.
link_down() {  # NAME WATCHDOG_S REGEX
  local name=$1 bound=$2 regex=$3 job t0 took rc=0
  HPDL=$hpdl timeout 120 $cluster pi_cluster 1 "$HPDL_NETNS_STATE/hostfile" "$fx/tiny.toml" \
    --set "run.output_dir=\"$work/down\"" --set "run.name=\"$name\"" --set train.epochs=1000000 \
    --set run.watchdog_s="$bound" >"$name.log" 2>&1 &
  job=$!
  for _ in $(seq 300); do grep -q "^ *3 " "down/$name/log.txt" 2>/dev/null && break; sleep 0.1; done
  ip netns exec hpdl-h2 ip link set eth0 down
  t0=$(date +%s.%N)
  wait $job || rc=$?
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  ip netns exec hpdl-h2 ip link set eth0 up
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: $name: exit $rc (124: still running after 120 s)"; tail "$name.log"; exit 1; }
  [ "$(grep -c 'hpdl: error:' "$name.log")" -eq 1 ] && grep -Eq "hpdl: error: $regex" "$name.log" ||
    { echo "FAIL: $name: not one error line matching /$regex/"; grep -v '^ *[0-9]' "$name.log" | tail -20; exit 1; }
  awk -v t="$took" 'BEGIN { exit !(t <= 40) }' || { echo "FAIL: $name: the launcher took $took s"; exit 1; }
  echo "$name: host 2's link down -> launcher ended in $took s (exit $rc): $(grep 'hpdl: error:' "$name.log" | cut -c1-160)"
}
# (With a short run.watchdog_s hpdl names the rank first; that case is not run here: rank 0
# printing a line an epoch through a stalled mpirun can block on its output.)
link_down down_keepalive 600 "mpirun lost the connection to host 10.77.77.12 \\(its link is down or it stopped\\)"

$cluster down
[ -z "$(ip netns list | grep '^hpdl-' || true)" ] || { echo "FAIL: namespaces left after down"; exit 1; }
[ ! -e "$HPDL_NETNS_STATE" ] || { echo "FAIL: state left after down"; exit 1; }
[ "$(ip -o link show | awk -F': ' '{print $2}' | sort)" = "$links_before" ] ||
  { echo "FAIL: the machine's own links changed"; exit 1; }
echo "PASS"
