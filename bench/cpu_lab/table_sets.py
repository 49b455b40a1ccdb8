"""Kernel against kernel on the CPU (session 28): PyTorch's aten out= kernel, pwpa with the GPU
table set (.gpu-tables) and pwpa with the CPU set (.cpu-tables, scripts/fit_bench_tables.sh
--cpu), all into the same preallocated y, 2^24 f32 inputs randn*4, 2 threads, interleaved
rounds (a 20 ms pause before each call, the order rotated); the minimum over rounds (this VM's time slices make medians swing by 8 ms steps).
python bench/cpu_lab/table_sets.py [ROUNDS] [FUNC,...]
SET_A and SET_B name the two table directories (default .gpu-tables and .cpu-tables)."""
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "2")
import torch  # noqa: E402

import pwpa  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from aten_out import TORCH_OUT_FNS as OUT  # noqa: E402

torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
funcs = sys.argv[2].split(",") if len(sys.argv) > 2 else list(OUT)
n = 1 << 24
x = torch.randn(n, generator=torch.Generator().manual_seed(0)) * 4
y = torch.empty_like(x)


def t1(fn):
    # PyTorch's OpenMP threads spin for a while after a parallel region and take the cores
    # from the next call (rayon's threads, or OpenMP's own): let them sleep first.
    time.sleep(0.02)
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


print(f"# {n} f32, 2 threads, min of {rounds} interleaved rounds, ms; torch {torch.__version__}")
set_a = os.environ.get("SET_A", ".gpu-tables")
set_b = os.environ.get("SET_B", ".cpu-tables")
print(f"| function | copy | PyTorch out= | pwpa, {set_a} (P/D) | pwpa, {set_b} (P/D) | {set_a} / PyTorch | {set_b} / PyTorch |")
print("|---|---|---|---|---|---|---|")
for f in funcs:
    tg = pwpa.load(f"{set_a}/{f}.json")
    tc = pwpa.load(f"{set_b}/{f}.json")
    fns = {
        "copy": lambda: y.copy_(x),
        "aten": lambda: OUT[f](x, y),
        "gpu": lambda: tg(x, out=y),
        "cpu": lambda: tc(x, out=y),
    }
    for fn in fns.values():
        fn()
    best = {k: float("inf") for k in fns}
    keys = list(fns)
    for r in range(rounds):
        for k in keys[r % 4:] + keys[:r % 4]:  # each call first in turn
            best[k] = min(best[k], t1(fns[k]))
    ms = {k: v * 1e3 for k, v in best.items()}
    print(f"| {f} | {ms['copy']:.2f} | {ms['aten']:.2f} | {ms['gpu']:.2f} ({tg.partitions}/{tg.degree}) | "
          f"{ms['cpu']:.2f} ({tc.partitions}/{tc.degree}) | {ms['aten'] / ms['gpu']:.2f}x | {ms['aten'] / ms['cpu']:.2f}x |",
          flush=True)
