#!/usr/bin/python3
"""The roofline of `hpdl time --csv FILE`: every layer's forward and backward pass as a point
(arithmetic intensity in FLOP/byte against achieved GFLOP/s) under this machine's two
measured ceilings (the GEMM peak and intensity x memory bandwidth), log-log.

Usage: plot_roofline.py EFFICIENCY_CSV [OUT_PNG]   (default: roofline.png beside the CSV)
Passes without FLOPs (views, copies) cannot be placed and are left out.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

path = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(path) or ".", "roofline.png")
rows = [r for r in csv.DictReader(open(path)) if float(r["flops"]) > 0 and float(r["seconds"]) > 0]
if not rows:
    sys.exit(f"{path}: no pass with FLOPs to place")
peak = float(rows[0]["gemm_flops_per_s"]) / 1e9
bw = float(rows[0]["memory_Bps"]) / 1e9
xs = [float(r["intensity"]) for r in rows]
lo, hi = min(xs + [peak / bw]) / 4, max(xs + [peak / bw]) * 4
fig, ax = plt.subplots(figsize=(8, 5.5))
grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
ax.plot(grid, [min(peak, x * bw) for x in grid], color="black", lw=1.5,
        label=f"roofline: GEMM peak {peak:.0f} GFLOP/s, memory {bw:.1f} GB/s")
for pass_name, marker, color in (("forward", "o", "tab:blue"), ("backward", "s", "tab:red")):
    sel = [r for r in rows if r["pass"] == pass_name]
    ax.scatter([float(r["intensity"]) for r in sel], [float(r["gflops_per_s"]) for r in sel],
               marker=marker, color=color, label=pass_name, zorder=3)
    for r in sel:
        ax.annotate(r["layer"], (float(r["intensity"]), float(r["gflops_per_s"])), fontsize=7,
                    xytext=(4, 2), textcoords="offset points")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("arithmetic intensity (FLOP / byte)")
ax.set_ylabel("achieved GFLOP/s")
ax.set_title(os.path.basename(path))
ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=120)
print(out)
