"""The points that profiling/validate_predict.sh writes (its table.txt, TABLE_OUT), read the
same way by every script that summarises them (predict_errors.py, grid_noise.py,
repeat_errors.py): one point a line,
  model link hosts measured_s predicted_s low_s high_s share_inside budget
A line that is not a point ends the script with one line naming the file and line, exit 2.
"""
import os
import sys
from typing import NamedTuple

FIELDS = "model link hosts measured predicted low high share budget"


class Point(NamedTuple):
    model: str
    link: str
    hosts: int
    measured: float  # seconds
    predicted: float
    low: float  # the forecast's range
    high: float
    share: float  # of the recorded steps inside the range
    budget: str  # cores per host, or "none"

    @property
    def error(self):
        return (self.predicted - self.measured) / self.measured

    @property
    def inside(self):
        return self.low <= self.measured <= self.high


def refuse(line):
    print(f"{os.path.basename(sys.argv[0])}: {line}", file=sys.stderr)
    sys.exit(2)


def read_points(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        refuse(f"cannot read {path}: {e.strerror}")
    points = []
    for n, line in enumerate(lines, 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 9:
            refuse(f"{path}:{n}: expected 9 fields ({FIELDS})")
        try:
            p = Point(f[0], f[1], int(f[2]), *(float(x) for x in f[3:8]), f[8])
        except ValueError:
            refuse(f"{path}:{n}: hosts is not a whole number or a time or share not a number")
        if p.hosts < 1 or p.measured <= 0:
            refuse(f"{path}:{n}: hosts or the measured step is not above 0")
        points.append(p)
    return points
