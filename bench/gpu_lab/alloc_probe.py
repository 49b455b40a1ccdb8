"""Does the output buffer decide the f16/bf16 rows of torch_bench (session 27)? Times pwpa
into a preallocated y (torch_bench's `table(x, out=y)`), pwpa allocating its output like
eager does (`table(x)`: the caching allocator hands back the block the previous call freed),
eager, and the copy, interleaved, on the same x. Run on the device with the CUDA wheel on
PYTHONPATH: python3 alloc_probe.py [tables dir]"""
import statistics
import os
import sys

import torch
import torch.nn.functional as F

import pwpa
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpu_timing import median_us  # noqa: E402  (bench/)

tdir = sys.argv[1] if len(sys.argv) > 1 else ".gpu-tables"
n = 1 << 28
g = torch.Generator(device="cpu").manual_seed(0)
x32 = (torch.randn(n, generator=g) * 4).cuda()
fns = {"silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp}


def run(fn):
    return median_us(fn, reps=12, lead=3_000_000)


for name, tf in fns.items():
    t = pwpa.load(f"{tdir}/{name}.json")
    for dt in (torch.bfloat16, torch.float16):
        x = x32.to(dt)
        y = torch.empty_like(x)
        res = {"out=y": [], "alloc": [], "eager": [], "copy": []}
        for _ in range(3):
            res["out=y"].append(run(lambda: t(x, out=y)))
            res["alloc"].append(run(lambda: t(x)))
            res["eager"].append(run(lambda: tf(x)))
            res["copy"].append(run(lambda: y.copy_(x)))
        print(f"{name:8s} {str(dt)[6:]:9s} " + "  ".join(f"{k} {statistics.median(v):7.2f}" for k, v in res.items()), flush=True)
        del x, y
