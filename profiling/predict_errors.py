#!/usr/bin/python3
"""The table and summary of hpdl predict against measured runs, from the points that
validate_predict.sh writes (grid_points.py reads them: one a line, model link hosts
measured_s predicted_s low_s high_s share_of_steps_inside budget).

Usage: predict_errors.py CORES TABLE [TABLE ...]
Prints each point (the error of the forecast, whether the measured step lies inside the
forecast's range, the share of recorded steps inside it), then the median and worst
|error|, the share of points and of steps inside the range and how wide it is, the run-to-run noise (the
unbudgeted 1-host points, which repeat their profile), and the same per budget.
CORES: this machine's cores; unbudgeted points with more hosts than cores share them
(marked oversubscribed).
"""
import statistics
import sys

from grid_points import read_points, refuse

if len(sys.argv) < 3 or not sys.argv[1].isdigit():
    refuse("usage: predict_errors.py CORES TABLE [TABLE ...] (this machine's cores, points files)")
cores = int(sys.argv[1])
rows = [p for path in sys.argv[2:] for p in read_points(path)]
print(f"\n{'model':16} {'link':8} {'budget':>6} {'hosts':>5} {'measured ms':>12} "
      f"{'predicted ms':>13} {'range ms':>17} {'error':>8} {'in':>3} {'steps in':>8}")
points = []
for r in rows:
    points.append((r.budget, abs(r.error), r.inside, r.share,
                   r.high / r.low if r.low > 0 else float("inf")))
    note = (f"  (oversubscribed: {r.hosts} ranks on {cores} cores)"
            if r.budget == "none" and r.hosts > cores else "")
    rng = f"{1e3 * r.low:.2f}-{1e3 * r.high:.2f}"
    print(f"{r.model:16} {r.link:8} {r.budget:>6} {r.hosts:5d} {1e3 * r.measured:12.2f} "
          f"{1e3 * r.predicted:13.2f} {rng:>17} {100 * r.error:+7.1f}% "
          f"{'yes' if r.inside else 'no':>3} {100 * r.share:7.0f}%{note}")


def summary(label, pts):
    errs = [e for _, e, _, _, _ in pts]
    print(f"{label}: median |error| {100 * statistics.median(errs):.1f}%, worst "
          f"{100 * max(errs):.1f}% over {len(pts)} points; measured step inside the range at "
          f"{100 * sum(i for _, _, i, _, _ in pts) / len(pts):.0f}% of points, "
          f"{100 * statistics.mean(s for _, _, _, s, _ in pts):.0f}% of recorded steps; the range "
          f"spans {statistics.median(w for *_, w in pts):.1f}x (median high / low)")


if points:
    print()
    summary("all", points)
    # An unbudgeted 1-host point runs what its profile ran, on the same host: its error is
    # this machine's run-to-run noise, a floor under every other point's.
    repeats = [100 * abs(r.error) for r in rows if r.budget == "none" and r.hosts == 1]
    if repeats:
        print("run-to-run noise (unbudgeted 1-host points repeat their profile): |error| "
              + ", ".join(f"{e:.1f}%" for e in sorted(repeats)))
    budgets = sorted({p[0] for p in points})
    if len(budgets) > 1:
        for b in budgets:
            summary(f"budget {b}", [q for q in points if q[0] == b])
