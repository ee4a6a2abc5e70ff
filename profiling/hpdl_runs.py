#!/usr/bin/env python3
"""Reading hpdl's CSV outputs (metrics.csv, steps.csv, layers.csv, ps_workers.csv,
prediction.csv) by column name, for the scripts in profiling/: one reader instead of a
positional awk or cut in each. As a command:

  hpdl_runs.py mean FILE COLUMN [--from-row K]   mean of COLUMN over rows K.. (1 = first)
  hpdl_runs.py last FILE COLUMN                  COLUMN of the last row
  hpdl_runs.py first FILE COLUMN                 COLUMN of the first row
"""
import csv
import sys


def rows(path):
    """The rows of an hpdl CSV as dicts; a missing column raises KeyError naming it."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def column(path, name, from_row=1):
    """COLUMN as floats over rows from_row.. (1-based); empty cells are skipped."""
    out = []
    for r in rows(path)[from_row - 1:]:
        if name not in r:
            raise KeyError(f"{path}: no column {name}")
        if r[name] != "":
            out.append(float(r[name]))
    return out


def main(argv):
    if len(argv) < 4 or argv[1] not in ("mean", "last", "first"):
        sys.exit(__doc__)
    how, path, name = argv[1:4]
    from_row = int(argv[5]) if len(argv) > 5 and argv[4] == "--from-row" else 1
    values = column(path, name, from_row)
    if not values:
        sys.exit(f"{path}: no value of {name} from row {from_row}")
    value = {"mean": sum(values) / len(values), "last": values[-1], "first": values[0]}[how]
    print(f"{value:.6g}")


if __name__ == "__main__":
    main(sys.argv)
