#!/usr/bin/python3
"""Plots bench_scaling.sh's rows: seconds per epoch against hosts, one line per mode, one
panel per link rate (log-log, with the ideal 1/H line from one host's sync epoch).

Usage: plot_scaling.py SCALING_CSV [OUT_PNG]   (default: next to the CSV, scaling.png)
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

path = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(path), "scaling.png")
rows = list(csv.DictReader(open(path)))
rates = sorted({r["rate"] for r in rows}, key=lambda r: [x["rate"] for x in rows].index(r))
fig, axes = plt.subplots(1, len(rates), figsize=(5 * len(rates), 4), squeeze=False)
for ax, rate in zip(axes[0], rates):
    mine = [r for r in rows if r["rate"] == rate]
    for mode, style in (("sync", "o-"), ("downpour", "s-"), ("dcasgd", "^-")):
        pts = sorted((int(r["hosts"]), float(r["epoch_s"])) for r in mine if r["mode"] == mode)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=mode)
    one = [float(r["epoch_s"]) for r in mine if r["mode"] == "sync" and r["hosts"] == "1"]
    hosts = sorted({int(r["hosts"]) for r in mine})
    if one:
        ax.plot(hosts, [one[0] / h for h in hosts], "k:", label="ideal (1 host / H)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(hosts)
    ax.set_xticklabels([str(h) for h in hosts])
    ax.set_xlabel("hosts (each %s core)" % mine[0]["cpus_per_host"])
    ax.set_ylabel("seconds per epoch")
    ax.set_title("MLP on Fashion-MNIST, %s links" % rate)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=90)
print(out)
