"""Output placement (session 27): pwpa and PyTorch's kernel into the same output blocks.
For bf16 and f16 silu: allocate y (as torch_bench does), then take the block that eager's
F.silu(x) returns (z) and a third fresh block (w); time pwpa `table(x, out=b)` and
`aten.silu.out(x, out=b)` for b in (y, z, w), plus `table(x)` and `F.silu(x)` allocating.
python3 place_probe.py [table.json]"""
import os
import sys

import torch

import pwpa
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_timing import median_us  # noqa: E402  (bench/)

t = pwpa.load(sys.argv[1] if len(sys.argv) > 1 else ".gpu-tables/silu.json")
n = 1 << 28
x32 = (torch.randn(n, generator=torch.Generator().manual_seed(0)) * 4).cuda()
F = torch.nn.functional
A = torch.ops.aten


run = median_us  # 9 runs of 5 calls after a 4M-cycle spin


for dt in (torch.bfloat16, torch.float16):
    x = x32.to(dt)
    y = torch.empty_like(x)
    z = F.silu(x)
    w = torch.empty_like(x)
    for r in range(2):
        row = []
        for bname, b in (("y", y), ("z", z), ("w", w)):
            row.append(f"{bname}: pwpa {run(lambda: t(x, out=b)):7.2f} aten {run(lambda: A.silu.out(x, out=b)):7.2f}")
        row.append(f"alloc: pwpa {run(lambda: t(x)):7.2f} eager {run(lambda: F.silu(x)):7.2f}")
        row.append(f"copy {run(lambda: y.copy_(x)):7.2f}")
        print(str(dt)[6:], " | ".join(row), flush=True)
    del x, y, z, w
