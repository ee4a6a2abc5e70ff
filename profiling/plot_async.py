"""Summarise and plot profiling/bench_async.sh's runs.

Usage: plot_async.py OUT MODEL:TARGET_ACCURACY ...
Reads OUT/<model>_<mode>/{metrics.csv,manifest.json}; writes OUT/async.csv,
OUT/summary.md (also printed) and OUT/accuracy.png.
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = ("sync", "downpour", "dcasgd")


def load(out, model, mode):
    run = os.path.join(out, f"{model}_{mode}")
    rows = list(csv.DictReader(open(os.path.join(run, "metrics.csv"))))
    return rows, json.load(open(os.path.join(run, "manifest.json")))


def main():
    out = sys.argv[1]
    targets = dict((m, float(t)) for m, t in (a.split(":") for a in sys.argv[2:]))
    table = ["| model | mode | ranks | epochs | s/epoch | test acc | weighted F1 | "
             "time to target | staleness mean | staleness p95 | push+pull / worker time |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(len(targets), 2, figsize=(11, 4 * len(targets)), squeeze=False)
    with open(os.path.join(out, "async.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "mode", "epoch", "train_s", "test_accuracy", "test_f1",
                    "train_loss", "samples_per_s"])
        for i, (model, target) in enumerate(targets.items()):
            for mode in MODES:
                rows, man = load(out, model, mode)
                for r in rows:
                    w.writerow([model, mode, r["epoch"], r["train_s"], r["test_accuracy"],
                                r["test_f1"], r["train_loss"], r["samples_per_s"]])
                t = [float(r["train_s"]) for r in rows]
                acc = [float(r["test_accuracy"]) for r in rows]
                ep = [int(r["epoch"]) for r in rows]
                reach = next((t[k] for k in range(len(acc)) if acc[k] >= target), None)
                ps = man.get("parameter_server", {})
                layout = (f"1+{man['ranks'] - 1}" if ps else str(man["ranks"]))
                table.append(
                    f"| {model} | {mode} | {layout} | {ep[-1]} | {t[-1] / len(t):.2f} | "
                    f"{acc[-1]:.4f} | {float(rows[-1]['test_f1']):.4f} | "
                    + (f"{reach:.1f} s (>= {target})" if reach is not None else f"not reached ({target})")
                    + " | "
                    + (f"{ps['staleness_mean']:.2f} | {ps['staleness_p95']} | "
                       f"{100 * ps['rma_fraction_mean']:.1f}% |" if ps else "- | - | - |"))
                axes[i][0].plot(t, acc, marker="o", label=mode)
                axes[i][1].plot(ep, acc, marker="o", label=mode)
            for j, xlabel in enumerate(("training time (s, evaluation excluded)", "epoch")):
                axes[i][j].set_xlabel(xlabel)
                axes[i][j].set_ylabel("test accuracy")
                axes[i][j].set_title(model)
                axes[i][j].grid(alpha=0.3)
                axes[i][j].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "accuracy.png"), dpi=100)
    text = "\n".join(table) + "\n"
    open(os.path.join(out, "summary.md"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
