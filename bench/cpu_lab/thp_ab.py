"""A/B of the transparent-huge-page advice on pwpa's fresh CPU outputs (session 34): t(x) with
pwpa.torch's advise_hugepages on (thp) and replaced by a no-op (nothp), PyTorch eager, and
pwpa into a preallocated y (kernel), interleaved, 11 rounds, ms (median, min).
Usage: python bench/cpu_lab/thp_ab.py gelu,silu f32"""
import time, statistics, sys
import torch, pwpa, pwpa.torch as pt
from pwpa import _native
torch.set_num_threads(2)
names = sys.argv[1].split(",")
dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[sys.argv[2] if len(sys.argv) > 2 else "f32"]
F = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "exp": torch.exp, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "erf": torch.erf}
x = (torch.randn(1 << 24) * 4).to(dt)
for name in names:
    t = pwpa.Table.load(f".cpu-tables/{name}.json")
    yk = torch.empty_like(x)
    def on():
        pt.advise_hugepages = _native.advise_hugepages; return t(x)
    def off():
        pt.advise_hugepages = lambda p, n: False; return t(x)
    fns = dict(thp=on, nothp=off, eager=lambda: F[name](x), kernel=lambda: t(x, out=yk))
    res = {k: [] for k in fns}
    for r in range(11):
        for k, f in fns.items():
            time.sleep(0.02)
            s = time.perf_counter(); y = f(); d = time.perf_counter() - s
            del y
            res[k].append(d * 1e3)
    print(name, sys.argv[2] if len(sys.argv) > 2 else "f32", "  ".join(f"{k} {statistics.median(v):6.2f} ({min(v):5.2f})" for k, v in res.items()))
