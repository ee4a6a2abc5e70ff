"""Plots of a profiled run (hpdl train with profile.enabled = true).

Usage: /usr/bin/python3 profiling/plot_trace.py RUN_DIR [OUT_DIR]
Writes into OUT_DIR (default RUN_DIR):
  layer_time.png      per-layer forward+backward time against iteration, one line per layer
                      (rank 0), as in seed 001's figures
  forward_backward.png forward vs backward mean time per layer (bars, all ranks)
  rank_breakdown.png  per rank: mean step time split into compute (forward, backward, loss,
                      update), data, communication/waiting, and unattributed
"""
import csv
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    run = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else run
    os.makedirs(out, exist_ok=True)
    trace = json.load(open(os.path.join(run, "trace", "rank0.json")))
    per_layer = defaultdict(lambda: defaultdict(float))
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("forward", "backward"):
            per_layer[e["name"][4:]][e["args"]["step"]] += e["dur"] / 1e3
    fig, ax = plt.subplots(figsize=(9, 5))
    for layer, by_step in per_layer.items():
        steps = sorted(by_step)
        ax.plot(steps, [by_step[s] for s in steps], marker=".", label=layer)
    ax.set_xlabel("iteration")
    ax.set_ylabel("forward + backward time (ms)")
    ax.set_title("per-layer time, rank 0")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "layer_time.png"), dpi=90)

    rows = list(csv.DictReader(open(os.path.join(run, "layers.csv"))))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [float(r["forward_mean_us"]) / 1e3 for r in rows], 0.4,
           label="forward")
    ax.bar([i + 0.2 for i in x], [float(r["backward_mean_us"]) / 1e3 for r in rows], 0.4,
           label="backward")
    ax.set_xticks(list(x))
    ax.set_xticklabels([r["layer"] for r in rows], rotation=45, ha="right")
    ax.set_ylabel("mean time (ms)")
    ax.set_title("forward vs backward per layer (all ranks)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "forward_backward.png"), dpi=90)

    steps = list(csv.DictReader(open(os.path.join(run, "steps.csv"))))
    parts = {"compute": ("forward_us", "backward_us", "loss_us", "update_us"),
             "data": ("data_us",), "communication / waiting": ("comm_us",),
             "unattributed": ("unattributed_us",)}
    ranks = sorted({int(r["rank"]) for r in steps})
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = [0.0] * len(ranks)
    for label, cols in parts.items():
        vals = []
        for rank in ranks:
            mine = [r for r in steps if int(r["rank"]) == rank]
            vals.append(sum(sum(float(r[c]) for c in cols) for r in mine) / len(mine) / 1e3)
        ax.bar([str(r) for r in ranks], vals, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xlabel("rank")
    ax.set_ylabel("mean step time (ms)")
    ax.set_title("per-rank breakdown of a step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rank_breakdown.png"), dpi=90)
    print("wrote", ", ".join(os.path.join(out, f) for f in
                             ("layer_time.png", "forward_backward.png", "rank_breakdown.png")))


if __name__ == "__main__":
    main()
