"""pwpa against PyTorch's own CPU kernels with preallocated outputs (``out=``): the
kernels' speed without the cost of allocating and first touching a fresh output, which
bench/torch_bench.py (``t(x)`` against ``F.gelu(x)``, both allocating) includes.

    .venv/bin/python bench/cpu_prealloc_vs_eager.py [N]      # default 2^24; 2 threads

Inputs randn·4; the catalogue's bf16-exact tables from .gpu-tables/ (scripts/fit_bench_tables.sh); the
minimum of 7 calls, two interleaved rounds each.
"""

import sys
import time

import torch

import pwpa

torch.set_num_threads(2)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 24
x = torch.randn(n) * 4
y = torch.empty(n)
eager = {
    "gelu": lambda: torch.ops.aten.gelu.out(x, out=y),
    "silu": lambda: torch.ops.aten.silu.out(x, out=y),
    "sigmoid": lambda: torch.sigmoid(x, out=y),
    "tanh": lambda: torch.tanh(x, out=y),
    "exp": lambda: torch.exp(x, out=y),
    "softplus": lambda: torch.ops.aten.softplus.out(x, 1, 20, out=y),
    "erf": lambda: torch.erf(x, out=y),
}
tables = {k: pwpa.Table.load(f".gpu-tables/{k}.json") for k in eager}


def best(f, reps=7):
    f()
    b = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b * 1e3


cp = best(lambda: y.copy_(x))
print(f"n={n} copy_ {cp:.3f} ms (2 threads, preallocated outputs, min of 7, randn*4)")
for k, f in eager.items():
    t = tables[k]
    e1, p1, e2, p2 = best(f), best(lambda: t(x, out=y)), best(f), best(lambda: t(x, out=y))
    e, p = min(e1, e2), min(p1, p2)
    print(f"{k:9s} eager {e:7.3f} ms  pwpa {p:7.3f} ms  pwpa/copy {cp / p:.2f}  speedup vs eager {e / p:.2f}")
