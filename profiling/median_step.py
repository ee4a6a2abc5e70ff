#!/usr/bin/python3
"""Step time of a profiled run, in seconds, from its steps.csv: the median (default) or
the mean.

Usage: median_step.py RUN_DIR SERVERS [median|mean|inside LOW HIGH]
Synchronous runs (SERVERS 0): a step ends with its slowest rank, so the statistic over
steps of the slowest rank's wall time. Parameter-server runs (SERVERS > 0): ranks below
SERVERS are servers and are skipped; workers do not wait for each other, so the statistic
over every worker's recorded steps. Under a CPU quota (emulated hosts with a CPU budget)
most steps run unthrottled and a few absorb the throttled time: the median then hides it,
the mean does not. `inside LOW HIGH` prints instead the share of those steps (seconds)
that lie in [LOW, HIGH]: how many steps a forecast's range holds. Used by
validate_predict.sh and bench_scaling.sh.
"""
import csv
import statistics
import sys

run_dir, servers = sys.argv[1], int(sys.argv[2])
how = sys.argv[3] if len(sys.argv) > 3 else "median"
rows = [r for r in csv.DictReader(open(run_dir + "/steps.csv")) if int(r["rank"]) >= servers]
if servers:
    steps = [float(r["wall_us"]) / 1e6 for r in rows]
else:
    by_step = {}
    for r in rows:
        by_step.setdefault(r["step"], []).append(float(r["wall_us"]) / 1e6)
    steps = [max(v) for v in by_step.values()]
if how == "inside":
    low, high = float(sys.argv[4]), float(sys.argv[5])
    print(sum(low <= s <= high for s in steps) / len(steps))
else:
    print((statistics.mean if how == "mean" else statistics.median)(steps))
