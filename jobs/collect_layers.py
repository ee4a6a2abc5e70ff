#!/usr/bin/env python3
"""The per-layer part of a sweep's results, in the shape of the profiling thesis's tables
(seed 001): for every profiled task (its run directory holds layers.csv, written when the
grid line sets profile.enabled=true), each layer's forward and backward time, backward over
forward, its share of the iteration's layer time, and its achieved GFLOP/s (from the work
columns), with the task's threads per rank (its manifest). Writes layers_sweep.csv and
layers_sweep.md into the sweep directory; where the grid runs one configuration at several
thread counts (threads=N on its lines), also layers_threads.md: each layer's time and
speed-up over its fewest threads, the thesis's scaling with cores. The charts of the same
(each layer's time across the tasks, the speed-up with threads) are the sweep's page,
report.html (study_page: `hpdl report --study`). Called by collect_sweep.py; does nothing
when no task was profiled.

Usage: collect_layers.py SWEEP_DIR GRID
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_sweep import grid_lines  # noqa: E402


def collect(sweep, lines):
    rows = []
    for k, line in enumerate(lines):
        path = os.path.join(sweep, "task%d" % k, "layers.csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            layers = list(csv.DictReader(f))
        try:
            with open(os.path.join(sweep, "task%d" % k, "manifest.json")) as f:
                threads = json.load(f).get("threads_per_rank", "")
        except (OSError, ValueError):
            threads = ""
        total = sum(float(r["forward_mean_us"]) + float(r["backward_mean_us"]) for r in layers)
        for r in layers:
            f_us, b_us = float(r["forward_mean_us"]), float(r["backward_mean_us"])
            def rate(gflop, us):
                return "%.2f" % (float(gflop) / (us * 1e-6)) if gflop not in (None, "") and us > 0 else ""
            rows.append({"task": k, "configuration": line, "threads": threads, "layer": r["layer"],
                         "forward_ms": "%.4f" % (f_us / 1e3), "backward_ms": "%.4f" % (b_us / 1e3),
                         "backward_over_forward": "%.2f" % (b_us / f_us) if f_us > 0 else "",
                         "share_of_layers": "%.4f" % ((f_us + b_us) / total) if total > 0 else "",
                         "forward_gflops_per_s": rate(r.get("forward_gflop"), f_us),
                         "backward_gflops_per_s": rate(r.get("backward_gflop"), b_us)})
    return rows


def write(sweep, rows):
    fields = list(rows[0].keys())
    with open(os.path.join(sweep, "layers_sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    md = ["| # | layer | forward ms | backward ms | bwd/fwd | share | fwd GFLOP/s | bwd GFLOP/s |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        share = "%.1f %%" % (100 * float(r["share_of_layers"])) if r["share_of_layers"] else ""
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["task"], r["layer"], r["forward_ms"], r["backward_ms"], r["backward_over_forward"],
            share, r["forward_gflops_per_s"], r["backward_gflops_per_s"]))
    with open(os.path.join(sweep, "layers_sweep.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


def thread_scaling(sweep, rows):
    """Per configuration run at two or more thread counts (its line without threads=N):
    each layer's forward + backward time per thread count and the speed-up over the fewest."""
    groups = {}
    for r in rows:
        if r["threads"] == "":
            continue
        base = re.sub(r"\s*threads=\S+", "", r["configuration"]).strip()
        groups.setdefault(base, {}).setdefault(int(r["threads"]), {})[r["layer"]] = (
            float(r["forward_ms"]) + float(r["backward_ms"]))
    groups = {b: g for b, g in groups.items() if len(g) >= 2}
    if not groups:
        return
    md = []
    for base, by_threads in groups.items():
        counts = sorted(by_threads)
        md += ["", "%s" % base, "",
               "| layer | " + " | ".join("%d thr ms (speed-up)" % t for t in counts) + " |",
               "|---|" + "---|" * len(counts)]
        for layer in by_threads[counts[0]]:
            t0 = by_threads[counts[0]][layer]
            cells = []
            for t in counts:
                ms = by_threads[t].get(layer)
                speedup = "%.2fx" % (t0 / ms) if t0 > 0 and ms and ms > 0 else "-"
                cells.append("" if ms is None else "%.3f (%s)" % (ms, speedup))
            md.append("| %s | %s |" % (layer, " | ".join(cells)))
    with open(os.path.join(sweep, "layers_threads.md"), "w") as f:
        f.write("per-layer forward + backward time per step against the threads per rank\n" +
                "\n".join(md) + "\n")
    print("\n".join(md))


def study_page(sweep):
    """The sweep's page (hpdl report --study): the hpdl the jobs ran ($HPDL, else the one on
    PATH, else build/hpdl of the submit directory, as jobs/lib.sh finds it)."""
    hpdl = os.environ.get("HPDL") or shutil.which("hpdl") or os.path.join(
        os.environ.get("SLURM_SUBMIT_DIR", "."), "build", "hpdl")
    rc = subprocess.run([hpdl, "report", "--study", sweep]).returncode
    if rc != 0:
        print("collect: no report.html (hpdl report exited %d)" % rc, file=sys.stderr)


def main(sweep, lines):
    rows = collect(sweep, lines)
    if rows:
        write(sweep, rows)
        thread_scaling(sweep, rows)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: collect_layers.py SWEEP_DIR GRID")
    main(sys.argv[1], grid_lines(sys.argv[2]))
