#!/usr/bin/env python3
"""A small MLP with GELU and SiLU on scikit-learn's digits, with pwpa activations.

1. Train with PyTorch's exact activations.
2. Swap in pwpa tables of several sizes (coarse ... bf16-exact) for inference and
   compare the test accuracy with the exact activations'.
3. Train a fresh network (same initialisation) with pwpa activations through autograd
   (gradients from the table's derivative) and compare convergence.

    pip install scikit-learn          # the digits data ships with it
    python examples/digits_mlp.py     # CPU: about 30 s on 2 idle cores; uses CUDA when pwpa has it

Tables come from ``pwpa.fit`` (a failed fit is an error, not a substitute table).
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

import pwpa
import pwpa.torch as pt

try:
    from sklearn.datasets import load_digits
except ImportError as e:  # pragma: no cover
    # Name the module that is missing: scikit-learn itself, or one of its dependencies.
    missing = getattr(e, "name", None) or str(e)
    raise SystemExit(
        f"this example needs scikit-learn (missing: {missing}): pip install scikit-learn"
    ) from e


EXACT = {
    "gelu": lambda v: F.gelu(v),
    "silu": F.silu,
}

# (label, fit keyword arguments)
SIZES = [
    ("crude 2x1", dict(partitions=2, degree=1)),
    ("coarse 4x1", dict(partitions=4, degree=1)),
    ("8x2", dict(partitions=8, degree=2)),
    ("16x3", dict(partitions=16, degree=3)),
    ("bf16-exact", dict(exact="bf16")),
]


def make_table(name, label, kwargs):
    return pwpa.fit(name, **kwargs), "fit"


def max_err(table, name):
    x = torch.linspace(-8, 8, 100001, dtype=torch.float64)
    want = EXACT[name](x)
    got = table(x.float()).double()
    return float((got - want).abs().max())


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(64, 128)
        self.a1 = nn.GELU()
        self.l2 = nn.Linear(128, 128)
        self.a2 = nn.SiLU()
        self.l3 = nn.Linear(128, 10)

    def forward(self, x):
        return self.l3(self.a2(self.l2(self.a1(self.l1(x)))))


def data(device):
    d = load_digits()
    x = d.data.astype(np.float32)
    y = d.target.astype(np.int64)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(x))
    n_test = len(x) // 5
    test, train = idx[:n_test], idx[n_test:]
    mu, sd = x[train].mean(0), x[train].std(0) + 1e-6
    x = (x - mu) / sd
    t = lambda a: torch.from_numpy(a).to(device)
    return t(x[train]), t(y[train]), t(x[test]), t(y[test])


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def train(model, xtr, ytr, xte, yte, epochs, log_every, tag):
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(1)
    curve = []
    for ep in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(len(xtr), generator=g).to(xtr.device)
        total = 0.0
        for i in range(0, len(xtr), 64):
            b = perm[i : i + 64]
            loss = F.cross_entropy(model(xtr[b]), ytr[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
        if ep % log_every == 0 or ep == epochs:
            acc = accuracy(model, xte, yte)
            curve.append((ep, total / len(xtr), acc))
            print(f"  [{tag}] epoch {ep:3d}  train loss {total / len(xtr):.6f}  test acc {acc:.4f}", flush=True)
    return curve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1 (got {args.epochs})")
    device = args.device or ("cuda" if torch.cuda.is_available() and pwpa.cuda_compiled() else "cpu")
    torch.manual_seed(0)
    xtr, ytr, xte, yte = data(device)
    print(f"digits: {len(xtr)} train / {len(xte)} test, device {device}")

    init = MLP()
    t0 = time.time()
    print("1. training with exact GELU/SiLU")
    exact_model = copy.deepcopy(init).to(device)
    exact_curve = train(exact_model, xtr, ytr, xte, yte, args.epochs, 10, "exact")
    exact_acc = accuracy(exact_model, xte, yte)
    with torch.no_grad():
        exact_pred = exact_model(xte).argmax(1)

    print("\n2. inference with pwpa tables in place of the exact activations")
    print(f"   {'table':12s} {'source':10s} {'gelu P x D':>10s} {'silu P x D':>10s} {'max err gelu':>12s} {'max err silu':>12s} {'test acc':>8s} {'same pred':>9s}")
    print(f"   {'exact':12s} {'torch':10s} {'':>10s} {'':>10s} {'':>12s} {'':>12s} {exact_acc:8.4f} {1.0:9.4f}")
    tables = {}
    for label, kw in SIZES:
        tg, sg = make_table("gelu", label, kw)
        ts, ss = make_table("silu", label, kw)
        tables[label] = (tg, ts)
        m = pt.replace_activations(copy.deepcopy(exact_model), {nn.GELU: tg, nn.SiLU: ts})
        acc = accuracy(m, xte, yte)
        with torch.no_grad():
            same = float((m(xte).argmax(1) == exact_pred).float().mean())
        src = "fit" if sg == ss == "fit" else "lsq*"
        print(
            f"   {label:12s} {src:10s} {tg.partitions:>5d} x {tg.degree:<2d} {ts.partitions:>5d} x {ts.degree:<2d} "
            f"{max_err(tg, 'gelu'):12.2e} {max_err(ts, 'silu'):12.2e} {acc:8.4f} {same:9.4f}"
        )
        if src != "fit":
            print(f"      * {sg}")

    print("\n3. training from the same initialisation with pwpa activations (autograd)")
    results = {}
    for label in ("16x3", "bf16-exact"):
        tg, ts = tables[label]
        m = pt.replace_activations(copy.deepcopy(init), {nn.GELU: tg, nn.SiLU: ts}).to(device)
        curve = train(m, xtr, ytr, xte, yte, args.epochs, 10, f"pwpa {label}")
        results[label] = (accuracy(m, xte, yte), curve)

    print("\nsummary")
    print(f"   exact activations: test acc {exact_acc:.4f}, final train loss {exact_curve[-1][1]:.4f}")
    for label, (acc, curve) in results.items():
        print(
            f"   pwpa {label:10s}: test acc {acc:.4f} ({acc - exact_acc:+.4f}), final train loss {curve[-1][1]:.4f}"
        )
    print(f"   total time {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
