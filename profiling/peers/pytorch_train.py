#!/usr/bin/python3
"""PyTorch peer of hpdl's LeNet and MLP configs, for side-by-side speed comparisons.

Reads the same HDF5 files (h5py), trains the same architecture with the same batch,
optimizer and thread count, and prints one JSON line with training samples/s measured
after a warm-up. Run with Debian's /usr/bin/python3 (python3-torch, python3-h5py); the
bench script preloads OpenBLAS so PyTorch does not use the slow reference BLAS.
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(50 * 7 * 7, 500), nn.ReLU(), nn.Linear(500, 10))


def mlp():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 64), nn.Tanh(), nn.Dropout(0.1),
        nn.Linear(64, 64), nn.Tanh(), nn.Dropout(0.1), nn.Linear(64, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["lenet", "mlp"], required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", choices=["adam", "sgd"], required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    with h5py.File(a.train, "r") as f:
        x = torch.from_numpy(np.asarray(f["x"], dtype=np.float32))
        y = torch.from_numpy(np.asarray(f["y"], dtype=np.int64))
    model = lenet() if a.model == "lenet" else mlp()
    decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
    rest = [p for n, p in model.named_parameters() if not n.endswith("weight")]
    groups = [{"params": decay, "weight_decay": a.l2}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.Adam(groups, lr=a.lr) if a.optimizer == "adam" else torch.optim.SGD(groups, lr=a.lr)
    model.train()
    g = torch.Generator().manual_seed(1)
    perm = torch.randperm(x.shape[0], generator=g)
    n_batches = x.shape[0] // a.batch

    def step(i):
        idx = perm[(i % n_batches) * a.batch:((i % n_batches) + 1) * a.batch]
        xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    dt = time.perf_counter() - t0
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "model": a.model,
                      "batch": a.batch, "threads": torch.get_num_threads(), "steps": a.steps,
                      "samples_per_s": a.steps * a.batch / dt, "loss": float(loss)}))


if __name__ == "__main__":
    main()
