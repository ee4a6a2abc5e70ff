#!/usr/bin/env bash
# CPU budgets of the emulated hosts (scripts/netns_cluster.sh up --cpus-per-host): a busy
# loop inside a host gets its budget (within 10 %), ranks that mpirun starts on a host
# through the rsh agent land in that host's cgroup, bad budgets are refused, and the
# cgroups are gone after `down`, after a failed start and after a new `up` replaces a
# cluster. While budgets are set, every core runs one spinner of the idle scheduling class
# (so that a quota's idle cores do not halt) in a group of its own that takes nothing a
# host wants (a busy loop on a host of 1 core still gets most of it), stopped by `down`;
# --let-cores-idle starts none. Skips (77) where namespaces or a cgroup cpu controller are not available.
# Usage: netns_cpu_budget.sh SOURCE_DIR HPDL FIXTURES WORK_DIR
set -eu
src=$1 hpdl=$2 fx=$3
source "$(dirname "$0")/netns_lib.sh"
netns_test_setup "$4"
if [ ! -f /sys/fs/cgroup/cpu/cgroup.procs ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  echo "SKIP: no cgroup cpu controller under /sys/fs/cgroup"; exit 77
fi
cgroups_left() { find /sys/fs/cgroup /sys/fs/cgroup/cpu -maxdepth 1 -type d -name 'hpdl-[hw]*' 2>/dev/null; }

# Bad budgets are refused before anything is made.
if $cluster up 2 --cpus-per-host 0.01 2>err.txt; then echo "FAIL: a 0.1 ms quota was accepted"; exit 1; fi
grep -q "cpus-per-host must be a number of cores" err.txt
if $cluster up 2 --cpus-per-host lots 2>err.txt; then echo "FAIL: a non-number budget was accepted"; exit 1; fi
if $cluster up 2 --cpus-per-host 0.5 --period-us 10 2>err.txt; then echo "FAIL: a 10 us period was accepted"; exit 1; fi
grep -q "period-us must be 1000..1000000, got '10'" err.txt
[ -z "$(cgroups_left)" ] || { echo "FAIL: cgroups left after refused starts: $(cgroups_left)"; exit 1; }

# A busy loop gets its budget: 0.25 core on host 1, 0.5 on host 2 of another cluster.
cat >busy.py <<'PY'
import sys, time
t0, c0 = time.time(), time.process_time()
while time.time() - t0 < float(sys.argv[1]):
    pass
print(f"{(time.process_time() - c0) / (time.time() - t0):.3f}")
PY
check_share() {  # HOST BUDGET [LOW (default 0.9)]
  local got
  got=$($cluster exec "$1" python3 busy.py 3)
  echo "host $1: busy loop got $got of a core (budget $2)"
  awk -v g="$got" -v b="$2" -v l="${3:-0.9}" 'BEGIN { exit !(g >= l * b && g <= 1.1 * b) }' ||
    { echo "FAIL: host $1's busy loop got $got of a core, budget $2 (${3:-0.9}x .. 1.1x)"; exit 1; }
}
$cluster up 2 --cpus-per-host 0.25
check_share 1 0.25
# One idle-class spinner per core, each on its own core; they did not take the budget above.
# (The cores of this process's affinity: nproc would follow OMP_NUM_THREADS, which ctest sets.)
ncores=$(/usr/bin/python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
warm=$(cat "$HPDL_NETNS_STATE/warm_cores")
[ "$(wc -w <<<"$warm")" -eq "$ncores" ] || { echo "FAIL: $(wc -w <<<"$warm") spinners for $ncores cores"; exit 1; }
cores=""
for pid in $warm; do
  chrt -p "$pid" | grep -q SCHED_IDLE || { echo "FAIL: spinner $pid: $(chrt -p "$pid")"; exit 1; }
  cores="$cores $(taskset -pc "$pid" | sed 's/.*: //')"
  grep -qE "(cpu|^0:):.*/hpdl-warm\$" "/proc/$pid/cgroup" || { echo "FAIL: spinner $pid not in hpdl-warm"; cat "/proc/$pid/cgroup"; exit 1; }
done
[ "$(tr ' ' '\n' <<<"$cores" | sed '/^$/d' | sort -u | wc -l)" -eq "$ncores" ] ||
  { echo "FAIL: spinners not one per core:$cores"; exit 1; }
$cluster status | grep -q "idle cores kept busy"
echo "idle cores kept busy: $ncores SCHED_IDLE spinners on cores$cores"
# A host of a whole core keeps most of it beside the spinners (a SCHED_IDLE spinner outside
# a group of its own took half; the quota's own accounting leaves about 0.9-0.95 without any).
$cluster up 1 --cpus-per-host 1
check_share 1 1 0.8
$cluster up 2 --cpus-per-host 0.5 --period-us 20000  # replaces the cluster and its cgroups
check_share 2 0.5
$cluster status | grep -q "CPU budget 0.5 cores per host (period 20000 us)"

# Ranks started by mpirun through the agent run inside their host's cgroup.
$cluster mpirun -np 2 sh -c 'cat /proc/self/cgroup' >cg.txt 2>&1 || { cat cg.txt; echo "FAIL: mpirun"; exit 1; }
for i in 1 2; do
  grep -qE "(cpu|^0:):.*/hpdl-h$i\$" cg.txt || { echo "FAIL: no rank in host $i's cgroup"; cat cg.txt; exit 1; }
done
echo "ranks in their hosts' cgroups: $(grep -oE 'hpdl-h[0-9]+$' cg.txt | sort | tr '\n' ' ')"

# A failed start (a bad rate, after the cgroups were made) leaves none behind; so does down.
if $cluster up 2 --cpus-per-host 0.5 --rate nonsense >start.log 2>&1; then echo "FAIL: a bad rate was accepted"; exit 1; fi
[ -z "$(cgroups_left)" ] || { echo "FAIL: cgroups left after a failed start: $(cgroups_left)"; exit 1; }
$cluster up 1 --cpus-per-host 0.5
warm=$(cat "$HPDL_NETNS_STATE/warm_cores")
$cluster down
[ -z "$(cgroups_left)" ] || { echo "FAIL: cgroups left after down: $(cgroups_left)"; exit 1; }
for pid in $warm; do
  # (one that has exited may wait as a zombie, with no command line, for its reaper)
  ! grep -qa 'while :' "/proc/$pid/cmdline" 2>/dev/null || { echo "FAIL: spinner $pid left after down"; exit 1; }
done
# --let-cores-idle: the budgets alone.
$cluster up 1 --cpus-per-host 0.5 --let-cores-idle
[ ! -e "$HPDL_NETNS_STATE/warm_cores" ] || { echo "FAIL: spinners with --let-cores-idle"; exit 1; }
! $cluster status | grep -q "idle cores kept busy" || { echo "FAIL: status says kept busy"; exit 1; }
$cluster down
echo "PASS"
