#!/usr/bin/python3
"""Plots bench_scaling.sh's rows: seconds per epoch against hosts, one line per mode, one
panel per link rate (log-log, with the ideal 1/H line from one host's sync epoch); where the
rows have times to a target accuracy (TARGET=...), a second row of panels plots those:
timed points filled, sync estimates ("~N": not run) hollow, runs cut at the bound ("> N")
as an upward triangle at the bound.

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
modes = list(dict.fromkeys(r["mode"] for r in rows))  # in the order the bench ran them
styles = [(m, "os^dvP*X"[k % 8], "-" if k < 8 else "--") for k, m in enumerate(modes)]
model = rows[0].get("model", "mlp_fashion_mnist")
timed = any(r.get("tta_s", "") not in ("", "-") for r in rows)
fig, axes = plt.subplots(2 if timed else 1, len(rates), figsize=(5 * len(rates), 8 if timed else 4),
                         squeeze=False)


def time_points(mine, mode):
    """(hosts, seconds, kind) for each row with a time: kind "timed", "estimate" or "cut"."""
    pts = []
    for r in mine:
        t = r.get("tta_s", "").strip()
        if r["mode"] != mode or t in ("", "-", "failed"):
            continue
        kind = "estimate" if t.startswith("~") else "cut" if t.startswith(">") else "timed"
        pts.append((int(r["hosts"]), float(t.lstrip("~> ")), kind))
    return sorted(pts)


for col, rate in enumerate(rates):
    ax = axes[0][col]
    mine = [r for r in rows if r["rate"] == rate]
    for mode, marker, line in styles:
        pts = sorted((int(r["hosts"]), float(r["epoch_s"])) for r in mine if r["mode"] == mode)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker + line, label=mode)
    one = [float(r["epoch_s"]) for r in mine if r["mode"] == "sync" and r["hosts"] == "1"]
    hosts = sorted({int(r["hosts"]) for r in mine})
    if one:
        ax.plot(hosts, [one[0] / h for h in hosts], "k:", label="ideal (1 host / H)")
    ax.set_ylabel("seconds per epoch")
    ax.set_title("%s, %s links" % (model, rate))
    if timed:
        tax = axes[1][col]
        for k, (mode, marker, line) in enumerate(styles):
            pts = time_points(mine, mode)
            if not pts:
                continue
            color = "C%d" % k
            tax.plot([p[0] for p in pts], [p[1] for p in pts], line, color=color, alpha=0.4)
            for kind, face, mk in (("timed", color, marker), ("estimate", "none", marker),
                                   ("cut", color, "^")):
                sel = [p for p in pts if p[2] == kind]
                if sel:
                    tax.plot([p[0] for p in sel], [p[1] for p in sel], mk, color=color,
                             markerfacecolor=face, linestyle="none",
                             label=mode + ("" if kind == "timed" else " (%s)" % kind))
        tax.set_ylabel("seconds to the target test accuracy")
        tax.set_title("%s: time to accuracy, %s links" % (model, rate))
    for a in [axes[i][col] for i in range(len(axes))]:
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xticks(hosts)
        a.set_xticklabels([str(h) for h in hosts])
        a.set_xlabel("hosts (each %s core)" % mine[0]["cpus_per_host"])
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=90)
print(out)
