#!/usr/bin/python3
"""Two runs of the same config and seed on different arithmetic (GPU against CPU, bf16
against f32): both metrics.csv files must have the same epochs, and every epoch's train
loss must agree within TOLERANCE x |loss A| + ATOL. With --differ, no epoch may agree exactly
(the second arithmetic really ran).

Usage: losses_agree.py A/metrics.csv B/metrics.csv TOLERANCE NAME_A NAME_B [--atol ATOL] [--differ]"""
import csv
import sys

a_path, b_path, tol, name_a, name_b = sys.argv[1:6]
differ = "--differ" in sys.argv[6:]
atol = float(sys.argv[sys.argv.index("--atol") + 1]) if "--atol" in sys.argv else 0.0
a, b = (list(csv.DictReader(open(p))) for p in (a_path, b_path))
if not (len(a) == len(b) > 0):
    sys.exit(f"FAIL: {len(a)} {name_a} epochs, {len(b)} {name_b} epochs")
for ra, rb in zip(a, b):
    x, y = float(ra["train_loss"]), float(rb["train_loss"])
    print(f"epoch {ra['epoch']}: train loss {name_a} {x:.6f} {name_b} {y:.6f}")
    if differ and x == y:
        sys.exit(f"FAIL: {name_b} gave the {name_a} loss exactly: {name_b} did not run")
    if abs(x - y) > float(tol) * abs(x) + atol:
        sys.exit(f"FAIL: the {name_b} loss is more than {float(tol):.0%} from the {name_a} loss")
