"""Host time per call of pwpa's CUDA paths against PyTorch's, on small tensors (the GPU
work is negligible; launches queue up): where a call's microseconds go. Device only.

    python bench/gpu_lab/call_overhead.py [--n 1024] [--calls 3000]
"""

import argparse
import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import pwpa
import pwpa.torch as pt
from pwpa import _eval

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1024)
ap.add_argument("--calls", type=int, default=3000)
ap.add_argument("--table", default=".gpu-tables/gelu.json")
a = ap.parse_args()

t = pwpa.load(a.table)
x = torch.randn(a.n, device="cuda")
y = torch.empty_like(x)
h = t.handle
native = t._native
stream = int(torch.cuda.current_stream().cuda_stream)


def per_call(fn, calls=a.calls):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    dt = time.perf_counter() - t0
    torch.cuda.synchronize()
    return dt / calls * 1e6


rows = [
    ("y.copy_(x)", lambda: y.copy_(x)),
    ("F.gelu(x)", lambda: F.gelu(x)),
    ("torch.sigmoid(x, out=y)", lambda: torch.sigmoid(x, out=y)),
    ("t(x, out=y)", lambda: t(x, out=y)),
    ("t(x)", lambda: t(x)),
    ("torch.ops.pwpa.eval(x, h)", lambda: torch.ops.pwpa.eval(x, h)),
    ("pt.pwpa_eval(x, t)", lambda: pt.pwpa_eval(x, t)),
    ("_eval.eval_tensor_into(t, x, y)", lambda: _eval.eval_tensor_into(t, x, y)),
    ("native._eval_cuda(...) (Rust alone)", lambda: native._eval_cuda(0, x.data_ptr(), y.data_ptr(), a.n, "f32", "f32", stream)),
    ("_eval.cuda_target(x.device)", lambda: _eval.cuda_target(x.device)),
    ("_eval.check_device(x.device)", lambda: _eval.check_device(x.device)),
    ("_eval._same_layout(x, y)", lambda: _eval._same_layout(x, y)),
    ("_eval.torch_code(x.dtype) x2", lambda: (_eval.torch_code(x.dtype), _eval.torch_code(y.dtype))),
    ("_eval.check_layout(x) x2", lambda: (_eval.check_layout(x, "input"), _eval.check_layout(y, "output"))),
]
print(f"{torch.cuda.get_device_name()}, n = {a.n}, {a.calls} calls each; host microseconds per call")
for name, fn in rows:
    print(f"  {per_call(fn):8.2f}  {name}")

pr = cProfile.Profile()
pr.enable()
for _ in range(a.calls):
    t(x, out=y)
pr.disable()
torch.cuda.synchronize()
print("\ncProfile of t(x, out=y), by own time:")
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
