#!/usr/bin/python3
"""hpdl predict against measured runs over repeats of one validation grid: a point's
measured step is the median of its repeats, so one slow or fast run does not decide its
error, and the repeats' own spread says how far the measurement moves on those hosts.

Usage: repeat_errors.py TABLE TABLE [TABLE ...]   (validate_grid.sh's points, one file a
repeat; a line: model link hosts measured_s predicted_s low_s high_s share_inside budget)
Prints each point measured in every repeat: its measured steps, their spread (slowest over
fastest), the median forecast and its error against the median measured step, and in how
many repeats the measured step lay inside that repeat's forecast range; then the median and
worst |error|, the share of (point, repeat) pairs inside the range, the run-to-run spread,
each repeat's own median and worst, and the same per budget.
"""
import statistics
import sys

from grid_points import read_points, refuse


if len(sys.argv) < 3:
    refuse("usage: repeat_errors.py TABLE TABLE [TABLE ...] (one points file a repeat)")
repeats = [{(p.budget, p.model, p.link, p.hosts): p for p in read_points(path)}
           for path in sys.argv[1:]]
keys = sorted(set.intersection(*(set(t) for t in repeats)))
if not keys:
    refuse("the repeats have no point in common")

print(f"{'model':16} {'link':8} {'budget':>6} {'hosts':>5} {'measured ms (each repeat)':>28} "
      f"{'spread':>7} {'predicted ms':>13} {'error':>8} {'in':>5}")
points = []  # (budget, |error|, spread, inside count, per-repeat |errors|)
for key in keys:
    budget, model, rate, hosts = key
    m = [t[key].measured for t in repeats]
    p = [t[key].predicted for t in repeats]
    inside = sum(t[key].inside for t in repeats)
    mm, pm = statistics.median(m), statistics.median(p)
    e = (pm - mm) / mm
    spread = max(m) / min(m) - 1
    each = [abs(pi - mi) / mi for mi, pi in zip(m, p)]
    points.append((budget, abs(e), spread, inside, each))
    print(f"{model:16} {rate:8} {budget:>6} {hosts:5d} {' '.join(f'{1e3 * x:.2f}' for x in m):>28} "
          f"{100 * spread:6.0f}% {1e3 * pm:13.2f} {100 * e:+7.1f}% {inside:2d}/{len(m)}")


def summary(label, pts):
    errs = [e for _, e, _, _, _ in pts]
    spreads = [s for _, _, s, _, _ in pts]
    pairs = len(pts) * len(repeats)
    per_repeat = ", ".join(
        f"{100 * statistics.median(x[4][r] for x in pts):.1f} / {100 * max(x[4][r] for x in pts):.1f}%"
        for r in range(len(repeats)))
    print(f"{label}: median |error| {100 * statistics.median(errs):.1f}%, worst {100 * max(errs):.1f}% "
          f"over {len(pts)} points (median forecast against median measured step of {len(repeats)} repeats); "
          f"measured step inside its repeat's range in {100 * sum(x[3] for x in pts) / pairs:.0f}% of "
          f"{pairs} runs; the repeats' spread median {100 * statistics.median(spreads):.0f}%, worst "
          f"{100 * max(spreads):.0f}%; each repeat alone (median / worst): {per_repeat}")


print()
summary("all", points)
budgets = sorted({p[0] for p in points})
if len(budgets) > 1:
    for b in budgets:
        summary(f"budget {b}", [q for q in points if q[0] == b])
