#!/usr/bin/python3
"""How far the measured steps of two runs of the same validation grid lie apart: the
floor under any forecast's error on those emulated hosts.

Usage: grid_noise.py DIR_A DIR_B   (two SAVE directories of profiling/validate_grid.sh)
Matches the points (model, link, hosts, budget) both grids measured and prints each one's
measured step in both and their difference (B against A), then per budget and overall the
median and worst |difference| and how many points differ by over 20 %.
"""
import glob
import os
import statistics
import sys

from grid_points import read_points, refuse


def points(grid):
    tables = sorted(glob.glob(os.path.join(grid, "cell*", "table.txt")))
    if not tables:
        refuse(f"{grid} has no cell*/table.txt (not a SAVE directory of validate_grid.sh)")
    out = {}
    for table in tables:
        for p in read_points(table):
            out.setdefault((p.model, p.link, p.hosts, p.budget), p.measured)
    return out


if len(sys.argv) != 3:
    refuse("usage: grid_noise.py DIR_A DIR_B (two SAVE directories of validate_grid.sh)")
a, b = points(sys.argv[1]), points(sys.argv[2])
common = sorted(set(a) & set(b), key=lambda k: (k[3], k[0], k[1], k[2]))
if not common:
    refuse("the two grids measured no point in common")
print(f"{'model':16} {'link':8} {'budget':>6} {'hosts':>5} {'A ms':>10} {'B ms':>10} {'B vs A':>8}")
diffs = {}
for key in common:
    model, rate, hosts, budget = key
    d = (b[key] - a[key]) / a[key]
    diffs.setdefault(budget, []).append(abs(d))
    diffs.setdefault("all", []).append(abs(d))
    print(f"{model:16} {rate:8} {budget:>6} {hosts:5d} {1e3 * a[key]:10.2f} {1e3 * b[key]:10.2f} {100 * d:+7.1f}%")
print()
for budget in ["all"] + sorted(k for k in diffs if k != "all"):
    d = diffs[budget]
    print(f"{'all' if budget == 'all' else 'budget ' + budget}: median |difference| {100 * statistics.median(d):.1f}%, "
          f"worst {100 * max(d):.1f}%, over 20 %: {sum(x > 0.2 for x in d)} of {len(d)} points")
