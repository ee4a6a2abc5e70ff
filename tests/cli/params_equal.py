#!/usr/bin/env python3
"""Compare the /params of two model.h5 files. Without TOL: exit 0 if they are bitwise
equal. With TOL (runs that train alike but sum in another order, e.g. on another rank
count): exit 0 if the largest absolute difference is at most TOL, printing it. Otherwise
print the largest difference and exit 1.
Usage: params_equal.py A/model.h5 B/model.h5 [TOL]   (Debian's python3-h5py)"""
import sys

import h5py
import numpy as np

a, b = (h5py.File(f, "r")["params"][:] for f in sys.argv[1:3])
if a.shape != b.shape:
    sys.exit("parameters differ: %s vs %s (shapes %s vs %s)" % (sys.argv[1], sys.argv[2], a.shape, b.shape))
if len(sys.argv) < 4:
    if np.array_equal(a, b):
        sys.exit(0)
    sys.exit("parameters differ: %s vs %s (max |difference| %s)" % (sys.argv[1], sys.argv[2], np.abs(a - b).max()))
tol = float(sys.argv[3])
diff = float(np.abs(a.astype(np.float64) - b).max())
print("max |difference| %.3g (tolerance %g)" % (diff, tol))
sys.exit(0 if diff <= tol else "parameters differ: %s vs %s" % (sys.argv[1], sys.argv[2]))
