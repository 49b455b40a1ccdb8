"""f32 output placement (session 28): pwpa `table(x, out=b)` and PyTorch's own out= kernel
into the same six output blocks, and both allocating. The stream cache hints of pwpa.cu
(IOH) are read once per process from PWPA_CUDA_IOH, so run one process per setting.
python3 place32.py TABLE.json ATEN_OP   (e.g. .gpu-tables/sigmoid.json sigmoid)"""
import os
import sys

import torch

import pwpa
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_timing import median_us  # noqa: E402  (bench/)

t = pwpa.load(sys.argv[1])
op = sys.argv[2]
n = 1 << 28
x = (torch.randn(n, generator=torch.Generator().manual_seed(0)) * 4).cuda()
A = torch.ops.aten
eager = getattr(torch, op, None) or getattr(torch.nn.functional, op)
aten_out = getattr(A, op).out


run = median_us  # 9 runs of 5 calls after a 4M-cycle spin


blocks = [torch.empty_like(x) for _ in range(6)]
pw = [run(lambda b=b: t(x, out=b)) for b in blocks]
at = [run(lambda b=b: aten_out(x, out=b)) for b in blocks]
pa, ea = run(lambda: t(x)), run(lambda: eager(x))
f = lambda v: " ".join("%.1f" % u for u in v)
print(f"{op} pwpa out= [{f(pw)}] max {max(pw):.1f} | aten out= [{f(at)}] max {max(at):.1f} | "
      f"alloc pwpa {pa:.1f} eager {ea:.1f} (us)")
