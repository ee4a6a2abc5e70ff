#!/usr/bin/env python3
"""PyTorch peer of hpdl's HAR residual bidirectional LSTM (inputs/har_*.toml).

Same architecture as hpdl's `residual_lstm` builder: input dropout; S residual layers,
each the sum of K bidirectional cell groups (per-step ReLU projection + LSTM of H/2 units,
one direction on the reversed sequence, outputs concatenated) followed by per-sample
normalisation with a scalar scale (0.5) and shift (0); last time step; dropout; linear
logits. Adam, L2 on weights, clipping by global norm, same batch and threads, on the CPU
or a GPU (--device cuda, fp32 with TF32 off as in hpdl; --graphs replays each step as one
CUDA graph; --mode compile runs the model under torch.compile, compiled in the warm-up).
Prints one JSON line with seconds per epoch, training samples/s and the mean step time,
measured after a warm-up epoch. Run with the peer's Python from profiling/peer_env.sh.
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


class Group(nn.Module):
    def __init__(self, cin, hidden, reverse):
        super().__init__()
        self.proj = nn.Linear(cin, hidden)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.reverse = reverse
        with torch.no_grad():  # forget-gate bias 1 (PyTorch has two bias vectors)
            self.lstm.bias_ih_l0[hidden:2 * hidden].fill_(1.0)
            self.lstm.bias_hh_l0.zero_()

    def forward(self, x):
        h = F.relu(self.proj(x))
        if self.reverse:
            return torch.flip(self.lstm(torch.flip(h, [1]))[0], [1])
        return self.lstm(h)[0]


class Residual(nn.Module):
    def __init__(self, cin, hidden, groups):
        super().__init__()
        self.groups = nn.ModuleList(
            nn.ModuleList([Group(cin, hidden // 2, False), Group(cin, hidden // 2, True)])
            for _ in range(groups))
        self.scale = nn.Parameter(torch.tensor(0.5))
        self.shift = nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        s = sum(torch.cat([fw(x), bw(x)], dim=2) for fw, bw in self.groups)
        mean = s.mean(dim=(1, 2), keepdim=True)
        var = s.var(dim=(1, 2), keepdim=True, unbiased=False)
        return self.scale * (s - mean) / torch.sqrt(var + 1e-5) + self.shift


class Har(nn.Module):
    def __init__(self, channels, hidden, stacked, groups, classes):
        super().__init__()
        self.layers = nn.ModuleList(
            Residual(channels if i == 0 else hidden, hidden, groups) for i in range(stacked))
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.dropout(x, 0.15, self.training)
        for layer in self.layers:
            x = layer(x)
        return self.out(F.dropout(x[:, -1, :], 0.15, self.training))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--stacked", type=int, default=2)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--graphs", action="store_true", help="capture the step as a CUDA graph")
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    with h5py.File(a.data, "r") as f:
        x = torch.from_numpy(np.asarray(f["train/x"], dtype=np.float32))
        y = torch.from_numpy(np.asarray(f["train/y"], dtype=np.int64))
    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    x, y = x.to(dev), y.to(dev)
    model = Har(x.shape[2], a.hidden, a.stacked, a.groups, int(y.max()) + 1).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.001, **({"capturable": True} if a.graphs else {}))
    weights = [p for n, p in model.named_parameters() if "weight" in n]
    steps = x.shape[0] // a.batch

    forward = torch.compile(model) if a.mode == "compile" else model

    def train_step(xb, yb):
        opt.zero_grad(set_to_none=not a.graphs)
        loss = F.cross_entropy(forward(xb), yb)
        loss = loss + 0.005 * sum((w * w).sum() for w in weights) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 15.0)
        opt.step()
        return loss

    model.train()
    run = step_runner(train_step, x, y, a.batch, a.graphs)

    def epoch(e):
        perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(e)).to(dev)
        for s in range(steps):
            idx = perm[s * a.batch:(s + 1) * a.batch]
            loss = run(x[idx], y[idx])
        return float(loss.detach())  # waits for the GPU

    epoch(0)  # warm-up
    t0 = time.perf_counter()
    for e in range(1, a.epochs + 1):
        loss = epoch(e)
    dt = (time.perf_counter() - t0) / a.epochs
    print(json.dumps({"peer": "pytorch", "model": f"har_{a.stacked}x{a.groups}", "hidden": a.hidden,
                      "threads": torch.get_num_threads(), "device": a.device,
                      "graphs": a.graphs, "mode": a.mode, "epoch_s": dt, "step_ms": 1e3 * dt / steps,
                      "samples_per_s": steps * a.batch / dt, "loss": loss}))


if __name__ == "__main__":
    main()
