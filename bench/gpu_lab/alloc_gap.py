"""Why does `table(x)` time ~6-8 us per call above `table(x, out=y)` in torch_bench when
bench/gpu_lab/alloc_probe.py saw none (session 27)? Host time per call, device
allocations (cudaMalloc/cudaFree) per call, and the per-call time with torch_bench's
spin lead against a long one. python3 alloc_gap.py [table.json]"""
import os
import sys
import time

import torch

import pwpa
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_timing import median_us  # noqa: E402  (bench/)

t = pwpa.load(sys.argv[1] if len(sys.argv) > 1 else ".gpu-tables/silu.json")
n = 1 << 28
x = (torch.randn(n, generator=torch.Generator().manual_seed(0)) * 4).cuda().to(torch.bfloat16)
y = torch.empty_like(x)
F = torch.nn.functional


def stats():
    s = torch.cuda.memory_stats()
    return s.get("num_device_alloc", 0), s.get("num_device_free", 0)


for name, fn in [("table(x)", lambda: t(x)), ("table(x, out=y)", lambda: t(x, out=y)), ("silu(x)", lambda: F.silu(x))]:
    fn()
    torch.cuda.synchronize()
    a0 = stats()
    t0 = time.perf_counter()
    for _ in range(20):
        fn()
    host = (time.perf_counter() - t0) / 20 * 1e6
    torch.cuda.synchronize()
    a1 = stats()
    res = {lead: median_us(fn, reps=7, lead=lead, warm=False) for lead in (0, 2_000_000, 20_000_000)}
    print(f"{name:16s} host {host:7.1f} us/call (GPU busy), cudaMalloc/Free per call {(a1[0]-a0[0])/20:.2f}/{(a1[1]-a0[1])/20:.2f}; "
          + " ".join(f"lead {k}: {v:7.2f} us" for k, v in res.items()), flush=True)
