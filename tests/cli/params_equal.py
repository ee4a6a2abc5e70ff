#!/usr/bin/env python3
"""Exit 0 if two model.h5 files hold bitwise-equal /params, else print the largest
difference and exit 1. Usage: params_equal.py A/model.h5 B/model.h5 (Debian's python3-h5py)."""
import sys

import h5py
import numpy as np

a, b = (h5py.File(f, "r")["params"][:] for f in sys.argv[1:3])
if a.shape == b.shape and np.array_equal(a, b):
    sys.exit(0)
diff = np.abs(a - b).max() if a.shape == b.shape else "shapes %s vs %s" % (a.shape, b.shape)
sys.exit("parameters differ: %s vs %s (max |difference| %s)" % (sys.argv[1], sys.argv[2], diff))
