"""A/B of pwpa's CPU output cache (session 40): t(x) with the cache (as shipped) and the
session-34 path without it (nocache: torch.empty_like, transparent huge pages advised, then
t(x, out=y); switching the cache off with cpu_output_cache(0) would also empty it), PyTorch eager (which allocates fresh memory each call), and pwpa and PyTorch into a
preallocated y (the kernels alone), interleaved, 11 rounds, ms (median, min). Each timed call's
output is freed before the next call, as in a loop over batches.
Usage: python bench/cpu_lab/cache_ab.py gelu,silu f32 [PAUSE_MS (20) before each call]"""
import statistics
import sys
import time

import torch

import pwpa
import pwpa.torch as pt
from pwpa import _native

torch.set_num_threads(2)
names = sys.argv[1].split(",")
dname = sys.argv[2] if len(sys.argv) > 2 else "f32"
dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dname]
F = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "exp": torch.exp,
     "sigmoid": torch.sigmoid, "tanh": torch.tanh, "erf": torch.erf}
pause = float(sys.argv[3]) / 1e3 if len(sys.argv) > 3 else 0.02
x = (torch.randn(1 << 24) * 4).to(dt)
for name in names:
    t = pwpa.Table.load(f".cpu-tables/{name}.json")
    yk = torch.empty_like(x)

    def on():
        return t(x)

    def off():
        y = torch.empty_like(x)
        _native.advise_hugepages(y.data_ptr(), y.numel() * y.element_size())
        return t(x, out=y)

    fns = dict(cache=on, nocache=off, eager=lambda: F[name](x), kernel=lambda: t(x, out=yk))
    if name not in ("gelu", "silu"):  # (no out= in torch.nn.functional)
        fns["eager_out"] = lambda: F[name](x, out=yk)
    res = {k: [] for k in fns}
    for r in range(11):
        for k, f in fns.items():
            time.sleep(pause)
            s = time.perf_counter()
            y = f()
            d = time.perf_counter() - s
            del y
            res[k].append(d * 1e3)
    print(name, dname, "  ".join(f"{k} {statistics.median(v):6.2f} ({min(v):5.2f})" for k, v in res.items()),
          flush=True)
