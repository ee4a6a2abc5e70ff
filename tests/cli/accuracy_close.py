#!/usr/bin/env python3
"""Compare the final test accuracy of two runs (their manifest.json). With one run: print its
accuracy. With two and TOL: print both and exit 0 if they differ by at most TOL (a fraction:
0.01 = 1 point), else 1 with both named.
Usage: accuracy_close.py RUN_A [RUN_B TOL]   (RUN_*: a run directory)"""
import json
import sys


def accuracy(run):
    with open(run + "/manifest.json") as f:
        return json.load(f)["final"]["test_accuracy"]


a = accuracy(sys.argv[1])
if len(sys.argv) == 2:
    print("%.4f" % a)
    sys.exit(0)
b, tol = accuracy(sys.argv[2]), float(sys.argv[3])
print("test accuracy %.4f (%s) against %.4f (%s)" % (b, sys.argv[2], a, sys.argv[1]))
sys.exit(0 if abs(a - b) <= tol else "test accuracy %.4f (%s) is more than %g from %.4f (%s)" % (b, sys.argv[2], tol, a, sys.argv[1]))
