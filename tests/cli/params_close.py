#!/usr/bin/env python3
"""Exit 0 if two model.h5 files hold /params within TOL of each other (the largest absolute
difference), else print it and exit 1. For runs that train alike but sum in another order
(another rank count): the equivalence tests' tolerance. Usage: params_close.py A B TOL"""
import sys

import h5py
import numpy as np

a, b = (h5py.File(f, "r")["params"][:] for f in sys.argv[1:3])
tol = float(sys.argv[3])
if a.shape != b.shape:
    sys.exit("parameters differ in shape: %s vs %s" % (a.shape, b.shape))
diff = float(np.abs(a.astype(np.float64) - b).max())
print("max |difference| %.3g (tolerance %g)" % (diff, tol))
sys.exit(0 if diff <= tol else "parameters differ: %s vs %s" % (sys.argv[1], sys.argv[2]))
