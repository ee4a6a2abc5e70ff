#!/usr/bin/env python3
"""The per-layer part of a sweep's results, in the shape of the profiling thesis's tables
(seed 001): for every profiled task (its run directory holds layers.csv, written when the
grid line sets profile.enabled=true), each layer's forward and backward time, backward over
forward, its share of the iteration's layer time, and its achieved GFLOP/s (from the work
columns). Writes layers_sweep.csv, layers_sweep.md and layer_time.png (each layer's forward
+ backward time across the configurations, one line per layer) into the sweep directory.
Called by collect_sweep.py; does nothing when no task was profiled.

Usage: collect_layers.py SWEEP_DIR GRID
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_sweep import grid_lines, pyplot  # noqa: E402


def collect(sweep, lines):
    rows = []
    for k, line in enumerate(lines):
        path = os.path.join(sweep, "task%d" % k, "layers.csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            layers = list(csv.DictReader(f))
        total = sum(float(r["forward_mean_us"]) + float(r["backward_mean_us"]) for r in layers)
        for r in layers:
            f_us, b_us = float(r["forward_mean_us"]), float(r["backward_mean_us"])
            def rate(gflop, us):
                return "%.2f" % (float(gflop) / (us * 1e-6)) if gflop not in (None, "") and us > 0 else ""
            rows.append({"task": k, "configuration": line, "layer": r["layer"],
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
    plt = pyplot("layer_time.png")
    if not plt:
        return
    tasks = sorted({r["task"] for r in rows})
    layers = list(dict.fromkeys(r["layer"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 5))
    for layer in layers:
        by_task = {r["task"]: float(r["forward_ms"]) + float(r["backward_ms"])
                   for r in rows if r["layer"] == layer}
        ax.plot([t for t in tasks if t in by_task], [by_task[t] for t in tasks if t in by_task],
                marker="o", markersize=3, label=layer)
    ax.set_xticks(tasks)
    ax.set_xticklabels(["task %d" % t for t in tasks])
    ax.set_ylabel("forward + backward per step (ms)")
    ax.set_yscale("log")
    ax.set_title("per-layer time across the sweep %s" % os.path.basename(os.path.normpath(sweep)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(sweep, "layer_time.png"), dpi=110)


def main(sweep, lines):
    rows = collect(sweep, lines)
    if rows:
        write(sweep, rows)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: collect_layers.py SWEEP_DIR GRID")
    main(sys.argv[1], grid_lines(sys.argv[2]))
