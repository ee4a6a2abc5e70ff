#!/usr/bin/env python3
"""PyTorch peer of hpdl's LeNet, MLP and AlexNet configs, for side-by-side speed comparisons.

Reads the same HDF5 files (h5py; AlexNet: synthetic input, as `hpdl time --synthetic`),
trains the same architecture with the same batch, optimizer and thread count, on the CPU
or on a GPU (--device cuda, fp32, TF32 off as in hpdl; --graphs replays the whole step
as one CUDA graph), and prints one JSON line with training samples/s measured after a
warm-up. --mode picks how PyTorch's users run it: eager, eager with the convolutions in
channels-last memory format (what one tuning a convnet on a CPU does), or the model under
torch.compile (mode "default"; compiling happens in the warm-up). Run with the peer's
Python from profiling/peer_env.sh (PyPI's torch, profiling/peers/requirements.txt).
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from cuda_graph import step_runner


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(50 * 7 * 7, 500), nn.ReLU(), nn.Linear(500, 10))


def mlp():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 64), nn.Tanh(), nn.Dropout(0.1),
        nn.Linear(64, 64), nn.Tanh(), nn.Dropout(0.1), nn.Linear(64, 10))


def alexnet():  # inputs/alexnet.toml: no local response normalisation
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(), nn.Conv2d(384, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2), nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4096, 1000))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["lenet", "mlp", "alexnet"], required=True)
    ap.add_argument("--train", help="HDF5 file (not for alexnet: synthetic input)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--graphs", action="store_true", help="capture the step as a CUDA graph")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", choices=["adam", "sgd"], required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--mode", choices=["eager", "channels_last", "compile"], default="eager")
    a = ap.parse_args()
    if a.mode == "channels_last" and a.model == "mlp":
        ap.error("--mode channels_last is for the convnets (lenet, alexnet)")

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32, as hpdl
    torch.backends.cudnn.allow_tf32 = False
    if a.model == "alexnet":
        x = torch.randn(4 * a.batch, 3, 224, 224)
        y = torch.randint(0, 1000, (4 * a.batch,))
    else:
        with h5py.File(a.train, "r") as f:
            x = torch.from_numpy(np.asarray(f["x"], dtype=np.float32))
            y = torch.from_numpy(np.asarray(f["y"], dtype=np.int64))
    x, y = x.to(dev), y.to(dev)
    model = {"lenet": lenet, "mlp": mlp, "alexnet": alexnet}[a.model]().to(dev)
    if a.mode == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
    rest = [p for n, p in model.named_parameters() if not n.endswith("weight")]
    groups = [{"params": decay, "weight_decay": a.l2}, {"params": rest, "weight_decay": 0.0}]
    capturable = {"capturable": True} if a.graphs else {}
    opt = (torch.optim.Adam(groups, lr=a.lr, **capturable) if a.optimizer == "adam"
           else torch.optim.SGD(groups, lr=a.lr))
    model.train()
    g = torch.Generator().manual_seed(1)
    perm = torch.randperm(x.shape[0], generator=g).to(dev)
    n_batches = x.shape[0] // a.batch

    forward = torch.compile(model) if a.mode == "compile" else model

    def train_step(xb, yb):
        opt.zero_grad(set_to_none=not a.graphs)
        loss = F.cross_entropy(forward(xb), yb)
        loss.backward()
        opt.step()
        return loss

    run = step_runner(train_step, x, y, a.batch, a.graphs)

    def step(i):
        idx = perm[(i % n_batches) * a.batch:((i % n_batches) + 1) * a.batch]
        return run(x[idx], y[idx])

    for i in range(a.warmup):
        step(i)
    if a.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    loss = float(loss.detach())  # waits for the GPU
    dt = time.perf_counter() - t0
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "model": a.model,
                      "device": a.device, "graphs": a.graphs, "mode": a.mode,
                      "batch": a.batch, "threads": torch.get_num_threads(), "steps": a.steps,
                      "samples_per_s": a.steps * a.batch / dt, "loss": loss}))


if __name__ == "__main__":
    main()
