#!/usr/bin/env python3
"""Results of a sweep, thesis-style: one row per grid line with its configuration, test
accuracy, weighted F1, wall time and samples/s, from outputs/<array id>/task<k>/ (manifest.json
and metrics.csv). Writes results.csv, results.md and accuracy_vs_time.png (test accuracy
against training time, one line per configuration) into the sweep directory, where tasks
were profiled the per-layer table of collect_layers.py, and the sweep's page, report.html
(`hpdl report --study`).

Usage: collect_sweep.py SWEEP_DIR GRID
"""
import csv
import json
import os
import re
import sys


def grid_lines(path):
    with open(path) as f:
        lines = [re.sub(r"#.*", "", l).strip() for l in f]
    return [l for l in lines if l]


def pyplot(figure):
    """matplotlib's pyplot without a display, or None (and a line saying `figure` is not
    drawn) where matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("collect: matplotlib not found: no %s" % figure, file=sys.stderr)
        return None
    return plt


def hms(seconds):
    if seconds < 60:
        return "%.1f s" % seconds
    s = int(round(seconds))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: collect_sweep.py SWEEP_DIR GRID")
    sweep, grid = sys.argv[1], sys.argv[2]
    rows, curves = [], []
    for k, line in enumerate(grid_lines(grid)):
        run = os.path.join(sweep, "task%d" % k)
        row = {"task": k, "configuration": line, "status": "missing", "ranks": "",
               "epochs": "", "test_accuracy": "", "weighted_f1": "", "wall_s": "",
               "wall_hms": "", "samples_per_s": ""}
        try:
            with open(os.path.join(run, "manifest.json")) as f:
                m = json.load(f)
            row["status"] = m.get("status", "?")
            row["ranks"] = m.get("ranks", "")
            final = m.get("final", {})
            with open(os.path.join(run, "metrics.csv")) as f:
                metrics = list(csv.DictReader(f))
            if final and metrics:
                row["epochs"] = final["epochs"]
                row["test_accuracy"] = "%.4f" % final["test_accuracy"]
                row["weighted_f1"] = "%.4f" % final["test_f1"]
                row["wall_s"] = "%.1f" % final["elapsed_s"]
                row["wall_hms"] = hms(final["elapsed_s"])
                sps = [float(r["samples_per_s"]) for r in metrics]
                row["samples_per_s"] = "%.1f" % (sum(sps) / len(sps))
                curves.append((line, [float(r["train_s"]) for r in metrics],
                               # per epoch: test accuracy, or validation accuracy when the
                               # run held a validation split (its test ran once, at the end)
                               [float(r["test_accuracy"] or r.get("val_accuracy") or "nan")
                                for r in metrics]))
        except (OSError, ValueError, KeyError) as e:
            print("collect: %s: %s" % (run, e), file=sys.stderr)
        rows.append(row)

    fields = list(rows[0].keys()) if rows else []
    with open(os.path.join(sweep, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    md = ["| # | configuration | status | ranks | epochs | accuracy | weighted F1 | wall time | samples/s |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append("| %s | `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
            r["task"], r["configuration"], r["status"], r["ranks"], r["epochs"],
            r["test_accuracy"], r["weighted_f1"], r["wall_hms"], r["samples_per_s"]))
    with open(os.path.join(sweep, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))

    plt = pyplot("accuracy_vs_time.png")
    if plt:
        fig, ax = plt.subplots(figsize=(8, 5))
        for label, t, acc in curves:
            ax.plot(t, acc, marker="o", markersize=3, label=label[-60:])
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("test accuracy")
        ax.set_title("sweep %s" % os.path.basename(os.path.normpath(sweep)))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(sweep, "accuracy_vs_time.png"), dpi=110)
    # Profiled tasks (profile.enabled=true in their grid line): the per-layer table too.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import collect_layers
    collect_layers.main(sweep, grid_lines(grid))
    collect_layers.study_page(sweep)
    missing = [r for r in rows if r["status"] != "complete"]
    if missing:
        sys.exit("collect: %d of %d configurations did not complete" % (len(missing), len(rows)))


if __name__ == "__main__":
    main()
