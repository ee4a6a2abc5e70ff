#!/usr/bin/python3
"""Median step time of a profiled run, in seconds, from its steps.csv.

Usage: median_step.py RUN_DIR SERVERS
Synchronous runs (SERVERS 0): a step ends with its slowest rank, so the median over steps
of the slowest rank's wall time. Parameter-server runs (SERVERS > 0): ranks below SERVERS
are servers and are skipped; workers do not wait for each other, so the median over every
worker's recorded steps. Used by validate_predict.sh and bench_scaling.sh.
"""
import csv
import statistics
import sys

run_dir, servers = sys.argv[1], int(sys.argv[2])
rows = [r for r in csv.DictReader(open(run_dir + "/steps.csv")) if int(r["rank"]) >= servers]
if servers:
    print(statistics.median(float(r["wall_us"]) for r in rows) / 1e6)
else:
    by_step = {}
    for r in rows:
        by_step.setdefault(r["step"], []).append(float(r["wall_us"]))
    print(statistics.median(max(v) for v in by_step.values()) / 1e6)
