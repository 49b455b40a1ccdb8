"""One table's 16-bit backward pass (torch.ops.pwpa.eval_backward) called a few times at
2^26 on randn*4 inputs (X0=1: all zeros), for Nsight Compute (ncu_bwd16.sh).
Usage: ncu_bwd16.py NAME DTYPE"""
import os
import sys

import torch

import pwpa
import pwpa.torch  # noqa: F401

name, dt = sys.argv[1], getattr(torch, sys.argv[2])
t = pwpa.Table.load(f".gpu-tables/{name}.json")
x = (torch.randn(1 << 26) * 4).to("cuda", dt)
if os.environ.get("X0") == "1":
    x.zero_()
g = torch.randn(1 << 26).to("cuda", dt)
for _ in range(4):
    torch.ops.pwpa.eval_backward(g, x, t.handle)
torch.cuda.synchronize()
