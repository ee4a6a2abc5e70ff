#!/usr/bin/python3
"""Step time of a profiled run, in seconds, from its steps.csv: the median (default) or
the mean.

Usage: median_step.py RUN_DIR SERVERS [median|mean|inside LOW HIGH]
Synchronous runs (SERVERS 0): the slowest rank's statistic over its own steps. Ranks wait
for each other only inside their exchanges, so a rank's steps add up to the run's wall time;
one step's walls differ by rank (one rank's pause falls in step k, another's in step k + 1,
and local SGD's ranks meet only every H steps), and the largest of each step's walls adds
every rank's pauses together: that read the MLP's sync steps on quarter-core hosts 14-17 %
and its DiLoCo H=64 steps up to 2.7x slower than the run went (docs/results.md, "A rank's
own steps"). Parameter-server runs (SERVERS > 0): ranks below SERVERS are servers and are
skipped; the statistic over every worker's recorded steps. Under a CPU quota (emulated
hosts with a CPU budget) most steps run unthrottled and a few absorb the throttled time:
the median then hides it, the mean does not. `inside LOW HIGH` prints instead the share of
the recorded steps (every counted rank's, in seconds) that lie in [LOW, HIGH]: how many
steps a forecast's range holds. Used by validate_predict.sh, reforecast_grid.sh and
bench_scaling.sh.
"""
import csv
import statistics
import sys

run_dir, servers = sys.argv[1], int(sys.argv[2])
how = sys.argv[3] if len(sys.argv) > 3 else "median"
by_rank = {}
for r in csv.DictReader(open(run_dir + "/steps.csv")):
    if int(r["rank"]) >= servers:
        by_rank.setdefault(r["rank"], []).append(float(r["wall_us"]) / 1e6)
steps = [s for v in by_rank.values() for s in v]
stat = statistics.mean if how == "mean" else statistics.median
if how == "inside":
    low, high = float(sys.argv[4]), float(sys.argv[5])
    print(sum(low <= s <= high for s in steps) / len(steps))
elif servers:
    print(stat(steps))
else:
    print(max(stat(v) for v in by_rank.values()))
