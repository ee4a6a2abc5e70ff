#!/usr/bin/env bash
# hpdl calibrate on the emulated 4-host cluster at 100 Mbit (one rank per host): network.json
# holds every host pair with a bandwidth near the links' rate, allreduce curves for 2 and 4
# ranks for every coll_tuned algorithm, the default and MPI_Iallreduce, RMA get/accumulate; nothing is
# flagged. Then host 3's link is slowed to 10 Mbit (a bad cable): calibrate names host 3
# and, with --strict, exits 3. Also 2 ranks on one host (shared memory, no slow flags), and
# hosts with a CPU budget of 0.25 core: calibrate records 0.25 of a core per rank and host,
# and the allreduce after bursts of compute
# (it runs alone: another test on the same cores would take part of that share).
# Usage: netns_calibrate.sh SOURCE_DIR HPDL WORK_DIR
set -eu
src=$1 hpdl=$2
source "$(dirname "$0")/netns_lib.sh"
netns_test_setup "$3"
py=/usr/bin/python3

$cluster up 4 --rate 100mbit
calibrate() {  # OUT [ARGS...]
  local out=$1; shift
  $cluster mpirun -np 4 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" calibrate --out "$work/$out" \
    --max-bytes 4194304 --budget-s 0.3 "$@"
}
calibrate net.json >calibrate.log 2>&1 || { echo "FAIL: calibrate"; cat calibrate.log; exit 1; }
cat calibrate.log
$py - "$work/net.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["format"] == "hpdl-network-1" and j["ranks"] == 4, j["ranks"]
assert [h["name"] for h in j["hosts"]] == ["hpdl-h1", "hpdl-h2", "hpdl-h3", "hpdl-h4"], j["hosts"]
p2p = j["point_to_point"]
assert len(p2p) == 6 and not any(p["same_host"] for p in p2p), p2p
for p in p2p:
    # 100 Mbit = 12.5 MB/s on the wire; TCP/IP headers take ~5 %.
    assert 0.6 * 12.5e6 < p["bandwidth_Bps"] < 1.1 * 12.5e6, p
    assert 0 < p["latency_s"] < 0.01, p
    sizes = [s["bytes"] for s in p["one_way"]]
    assert sizes[0] == 8 and all(b == 8 * a for a, b in zip(sizes, sizes[1:-1])), sizes
    t = [s["seconds"] for s in p["one_way"]]
    assert t[-1] > t[0], t  # larger messages take longer
    # The CPU one end spends on a transfer: measured at every size, never more than its time.
    assert all(0 < s["cpu_s"] <= 1.05 * s["seconds"] for s in p["one_way"]), p["one_way"]
assert j["allreduce_algorithms_forced"], "coll_tuned algorithms could not be forced"
curves = {(a["algorithm"], a["ranks"]) for a in j["allreduce"]}
for alg in ["iallreduce", "default", "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"]:
    for r in (2, 4):
        assert (alg, r) in curves, (alg, r)
assert all(len(a["samples"]) >= 3 for a in j["allreduce"]), j["allreduce"]
assert {r["op"] for r in j["rma"]} == {"get", "accumulate"}
for r in j["rma"]:  # across hosts: through the 100 Mbit link, not the machine's memory
    assert 0.3 * 12.5e6 < r["bandwidth_Bps"] < 1.1 * 12.5e6, r
assert len(j["reduce_Bps_per_core"]) == 4 and min(j["reduce_Bps_per_core"]) > 1e8
assert j["flags"] == [], j["flags"]
print("network.json consistent: 6 pairs at %.1f-%.1f MB/s, %d allreduce curves, %.1f s" % (
    min(p["bandwidth_Bps"] for p in p2p) / 1e6, max(p["bandwidth_Bps"] for p in p2p) / 1e6,
    len(j["allreduce"]), j["seconds"]))
PY

# A bad cable on host 3.
$cluster rate 3 10mbit
rc=0; calibrate slow.json --strict >slow.log 2>&1 || rc=$?
cat slow.log
[ "$rc" -eq 3 ] || { echo "FAIL: --strict with a slow host exited $rc, expected 3"; exit 1; }
grep -q "WARNING: slow host hpdl-h3: all 3 of its links are slow" slow.log ||
  { echo "FAIL: the slow host is not named"; exit 1; }
[ "$(grep -c "WARNING: slow pair" slow.log)" -eq 3 ]

# Two ranks on one host: the pair is measured within the host (no network link).
$cluster mpirun -np 2 --host 10.77.77.11:2 -x OMP_NUM_THREADS=1 "$hpdl" calibrate --out "$work/one.json" \
  --max-bytes 1048576 --budget-s 0.2 >one.log 2>&1 || { cat one.log; exit 1; }
$py -c "import json,sys; j=json.load(open('$work/one.json')); p=j['point_to_point']; assert len(p)==1 and p[0]['same_host'] and p[0]['bandwidth_Bps'] > 1e8, p"

# Hosts with a CPU budget: calibrate records the share of a core each rank gets, the cores
# per host (0.25 each here: 0.2 .. 0.275, since 0.5 s under a 10 ms-period quota, just after
# the ranks start, measured 0.213 on one rank in a CI run; unbudgeted it reads about 1), and
# that its waits slept.
if [ -f /sys/fs/cgroup/cpu/cgroup.procs ] || [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  $cluster up 2 --rate 1gbit --cpus-per-host 0.25 >/dev/null
  $cluster mpirun -np 2 -x OMP_NUM_THREADS=1 "$hpdl" calibrate --out "$work/budget.json" \
    --max-bytes 65536 --budget-s 0.2 >budget.log 2>&1 || { cat budget.log; exit 1; }
  grep "CPU while every rank computes" budget.log
  $py - "$work/budget.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["cpu_share_per_rank"]) == 2 and len(j["cores_per_host"]) == 2, j
for c in j["cpu_share_per_rank"] + j["cores_per_host"]:
    assert 0.2 <= c <= 0.275, j["cpu_share_per_rank"]
# Its waits sleep, as training's do there (a spinning rank would be timed throttled), their
# longest pause fitted to the quarter core (75 us / 0.25).
assert j["wait"] == "sleep: this host's CPU has a quota of 0.25 cores (pauses up to 300 us)", j.get("wait")
# The allreduce after bursts of compute (two slices of CPU each): measured where the ranks
# pause, and not faster than back to back at its largest size.
burst = j["allreduce_after_compute_cpu_s"]
assert 0.001 < burst < 0.1, burst
after = [a for a in j["allreduce"] if a["algorithm"] == "iallreduce after compute"]
assert len(after) == 1 and after[0]["ranks"] == 2, after
sizes = [s["bytes"] for s in after[0]["samples"]]
assert sizes[:3] == [64, 512, 4096] and sizes[-1] <= 65536, sizes
print("allreduce after %.1f ms of compute: %s" % (1e3 * burst,
      ", ".join("%d B %.1f ms" % (s["bytes"], 1e3 * s["seconds"]) for s in after[0]["samples"])))
PY
fi
echo "PASS"
